#include "coordinator/dispatch/worker_pool.h"

#include "absl/strings/str_cat.h"
#include "common/device_kind.h"
#include "common/enum_names.h"

namespace hpt {

WorkerPool::WorkerPool(Options options) : options_(std::move(options)) {}

absl::Status WorkerPool::Register(const std::string& address, DeviceKind::Name kind,
                                  const std::string& name, const std::string& device_id) {
  if (address.empty()) {
    return absl::InvalidArgumentError("RegisterWorkerRequest.address is empty");
  }
  if (KindName(kind).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("RegisterWorkerRequest.kind ", int(kind),
                                                   " is not ",
                                                   AllowedNames(DeviceKind::Name_descriptor())));
  }
  absl::MutexLock lock(&mu_);
  WorkerEntry& e = workers_[address];
  e.address = address;
  e.kind = kind;
  e.name = name.empty() ? absl::StrCat(KindName(kind), "@", address) : name;
  e.device_id = device_id;
  e.last_seen = options_.now();
  return absl::OkStatus();
}

void WorkerPool::AddStatic(const std::string& address, DeviceKind::Name kind) {
  absl::MutexLock lock(&mu_);
  WorkerEntry& e = workers_[address];
  e.address = address;
  e.kind = kind;
  e.name = absl::StrCat(KindName(kind), "@", address);
  e.is_static = true;
}

void WorkerPool::MarkDown(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(address);
  if (it != workers_.end()) it->second.down_since = options_.now();
}

bool WorkerPool::IsLive(const WorkerEntry& e) const {
  const absl::Time now = options_.now();
  if (e.is_static) return now - e.down_since > options_.liveness_timeout;
  return e.last_seen > e.down_since && now - e.last_seen <= options_.liveness_timeout;
}

bool WorkerPool::IsUp(const std::string& address) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = workers_.find(address);
  return it != workers_.end() && IsLive(it->second);
}

std::vector<WorkerEntry> WorkerPool::Live(DeviceKind::Name kind) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<WorkerEntry> live;
  for (const auto& [address, e] : workers_) {
    if (e.kind == kind && IsLive(e)) live.push_back(e);
  }
  return live;
}

std::vector<WorkerEntry> WorkerPool::All() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<WorkerEntry> all;
  for (const auto& [address, e] : workers_) all.push_back(e);
  return all;
}

absl::StatusOr<std::vector<WorkerEntry>> WorkerPool::WaitFor(
    DeviceKind::Name kind, int count, absl::Duration timeout,
    const std::function<bool()>& cancelled) {
  const absl::Time give_up = absl::Now() + timeout;
  while (true) {
    if (cancelled && cancelled()) {
      return absl::CancelledError(
          absl::StrCat("cancelled while waiting for ", count, " ", KindName(kind), " worker(s)"));
    }
    std::vector<WorkerEntry> live = Live(kind);
    if (static_cast<int>(live.size()) >= count) {
      live.resize(count);
      return live;
    }
    if (absl::Now() >= give_up) {
      return absl::UnavailableError(
          absl::StrCat("the job needs ", count, " ", KindName(kind), " worker(s) but ", live.size(),
                       " registered within ", absl::FormatDuration(timeout),
                       "; start workers with --coordinator pointing here"));
    }
    // Registration is a heartbeat; polling it twice a second is plenty.
    absl::SleepFor(absl::Milliseconds(200));
  }
}

}  // namespace hpt
