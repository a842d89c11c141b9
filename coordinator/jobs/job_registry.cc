#include "coordinator/jobs/job_registry.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cost/text_report.h"

namespace hpt {

bool JobRegistry::IsTerminal(JobState state) { return JobEnded(state); }

absl::StatusOr<JobRegistry::Record*> JobRegistry::Find(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
  }
  return it->second.get();
}

bool JobRegistry::Cancelled(const std::string& job_id) const {
  absl::StatusOr<Record*> record = Find(job_id);
  return !record.ok() || (*record)->cancel_requested;
}

JobRegistry::Record& JobRegistry::Add(Job job, bool persist) {
  auto record = std::make_unique<Record>();
  record->job = std::move(job);
  Record& added = *record;
  const std::string id = added.job.job_id();
  if (persist) Persist(added, /*force=*/true);
  jobs_[id] = std::move(record);
  return added;
}

std::vector<Job> JobRegistry::List() const {
  std::vector<Job> jobs;
  for (const auto& [id, record] : jobs_) jobs.push_back(record->job);
  return jobs;
}

std::string JobRegistry::JobOfRequest(const std::string& request_id) const {
  auto it = request_ids_.find(request_id);
  return it == request_ids_.end() ? "" : it->second;
}

void JobRegistry::RememberRequest(const std::string& request_id, const std::string& job_id) {
  if (!request_id.empty()) request_ids_[request_id] = job_id;
}

void JobRegistry::SetState(Record& record, JobState state, const std::string& error) {
  record.job.set_state(state);
  if (!error.empty()) record.job.set_error(error);
  if (IsTerminal(state)) {
    record.job.set_end_time_unix_ms(absl::ToUnixMillis(absl::Now()));
    record.data.reset();  // the data set is only needed while training
  }
  Persist(record, /*force=*/true);
  UpdateCounts();
  Notify(record.job);
}

void JobRegistry::AddRecovery(Record& record, const std::string& cause, int64_t from_step) {
  Recovery& r = *record.job.add_recoveries();
  r.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
  r.set_cause(cause);
  r.set_from_step(from_step);
  r.set_lost_steps(std::max<int64_t>(0, record.job.progress().step() - from_step));
  std::fprintf(stderr, "hpt_coordinator: %s goes back to step %lld: %s\n",
               record.job.job_id().c_str(), static_cast<long long>(from_step), cause.c_str());
}

void JobRegistry::Notify(const Job& job) {
  auto range = watchers_.equal_range(job.job_id());
  for (auto it = range.first; it != range.second; ++it) it->second.second(job);
  if (options_.metrics != nullptr) options_.metrics->ObserveJob(job);
}

void JobRegistry::Persist(Record& record, bool force) {
  if (options_.store == nullptr) return;
  const absl::Time now = absl::Now();
  if (!force && now - record.persisted < absl::Seconds(1)) return;
  record.persisted = now;
  if (absl::Status s = options_.store->Put(record.job); !s.ok()) {
    std::fprintf(stderr, "hpt_coordinator: %s\n", std::string(s.message()).c_str());
  }
  if (record.work_record != nullptr && record.work_record != record.stored_record) {
    absl::Status s = options_.store->PutWorkRecord(record.job.job_id(), *record.work_record);
    if (!s.ok()) std::fprintf(stderr, "hpt_coordinator: %s\n", std::string(s.message()).c_str());
    record.stored_record = record.work_record;
  }
  if (force && record.history != nullptr) {
    absl::Status s = options_.store->PutHistory(record.job.job_id(), record.history->ToProto());
    if (!s.ok()) std::fprintf(stderr, "hpt_coordinator: %s\n", std::string(s.message()).c_str());
  }
}

void JobRegistry::UpdateCounts() {
  if (options_.metrics == nullptr) return;
  std::map<JobState, int> counts;
  for (const auto& [id, record] : jobs_) ++counts[record->job.state()];
  options_.metrics->SetJobCounts(counts);
}

void JobRegistry::ForgetOldJobs() {
  int finished = 0;
  for (const auto& [id, record] : jobs_) finished += IsTerminal(record->job.state());
  for (auto it = jobs_.begin(); it != jobs_.end() && finished > options_.max_retained_jobs;) {
    if (IsTerminal(it->second->job.state()) && watchers_.count(it->first) == 0) {
      const std::string id = it++->first;
      Forget(id).IgnoreError();
      --finished;
    } else {
      ++it;
    }
  }
}

absl::Status JobRegistry::Forget(const std::string& job_id) {
  if (options_.metrics != nullptr) options_.metrics->ForgetJob(job_id);
  absl::Status status;
  if (options_.store != nullptr) status = options_.store->Remove(job_id);
  if (!options_.state_dir.empty()) {
    RemoveCheckpoints(CheckpointDir(options_.state_dir, job_id));
    RemoveCheckpoints(ModelDir(job_id));
  }
  jobs_.erase(job_id);
  return status;
}

void JobRegistry::AbortClients(Record& record, const absl::Status& reason) {
  for (WorkerClient* client : record.clients) client->Abort(reason);
}

absl::StatusOr<int64_t> JobRegistry::Watch(const std::string& job_id, Watcher watcher) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Record*> record = Find(job_id);
  if (!record.ok()) return record.status();
  const int64_t token = next_token_++;
  watcher((*record)->job);
  watchers_.emplace(job_id, std::make_pair(token, std::move(watcher)));
  return token;
}

void JobRegistry::Unwatch(int64_t token) {
  absl::MutexLock lock(&mu_);
  for (auto it = watchers_.begin(); it != watchers_.end(); ++it) {
    if (it->second.first == token) {
      watchers_.erase(it);
      return;
    }
  }
}

std::string JobRegistry::ModelDir(const std::string& job_id) const {
  return absl::StrCat(options_.state_dir, "/models/", job_id);
}

}  // namespace hpt
