// WorkerPool: the workers the coordinator knows of. Workers register (and
// re-register as a heartbeat); one not heard from within the liveness
// timeout is down. Workers given on the command line never expire.
// Thread-safe. Time comes from an injectable clock so tests need no sleeps.
#ifndef HPT_COORDINATOR_DISPATCH_WORKER_POOL_H_
#define HPT_COORDINATOR_DISPATCH_WORKER_POOL_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "proto/work.pb.h"

namespace hpt {

struct WorkerEntry {
  std::string address;
  DeviceKind::Name kind = DeviceKind::DEVICE_KIND_UNSPECIFIED;
  std::string name;
  // The physical device it computes on (RegisterWorkerRequest.device_id):
  // GPU workers with the same one share a GPU. Empty: a device of its own.
  std::string device_id;
  absl::Time last_seen;
  bool is_static = false;
  // A call to it failed with UNAVAILABLE at this time: out of the pool
  // until it is heard from again (a registered worker's next heartbeat), or
  // for a liveness timeout (a static one).
  absl::Time down_since = absl::InfinitePast();
};

class WorkerPool {
 public:
  struct Options {
    // Workers heartbeat every 0.5 s (worker_server.h): four missed beats.
    absl::Duration liveness_timeout = absl::Seconds(2);
    std::function<absl::Time()> now = [] { return absl::Now(); };
  };
  explicit WorkerPool(Options options);

  absl::Status Register(const std::string& address, DeviceKind::Name kind, const std::string& name,
                        const std::string& device_id = "");
  void AddStatic(const std::string& address, DeviceKind::Name kind);
  // Takes a worker out of the pool at once (a call to it found it gone),
  // instead of after the liveness timeout; jobs placed later skip it.
  void MarkDown(const std::string& address);

  std::vector<WorkerEntry> Live(DeviceKind::Name kind) const;
  // Whether the worker at `address` is known and live.
  bool IsUp(const std::string& address) const;
  std::vector<WorkerEntry> All() const;

  // Waits until `count` workers of `kind` are live, or `timeout` passes
  // (UNAVAILABLE), or `cancelled` returns true (CANCELLED; polled with the
  // pool, five times a second).
  absl::StatusOr<std::vector<WorkerEntry>> WaitFor(
      DeviceKind::Name kind, int count, absl::Duration timeout,
      const std::function<bool()>& cancelled = nullptr);

 private:
  bool IsLive(const WorkerEntry& e) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, WorkerEntry> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_DISPATCH_WORKER_POOL_H_
