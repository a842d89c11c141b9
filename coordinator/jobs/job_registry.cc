#include "coordinator/jobs/job_registry.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "cost/text_report.h"

namespace hpt {

bool JobRegistry::IsTerminal(JobState state) { return JobEnded(state); }

void JobRegistry::Locked::SetState(JobState state, const std::string& error) {
  Job& job = record_.job;
  // Elapsed time runs on from the moment the job starts running; not while
  // it waits in the queue, nor after it ended.
  if (state != RUNNING) {
    JobProgress& p = *job.mutable_progress();  // its elapsed time up to now, kept
    p.set_elapsed_s(p.elapsed_s() + registry_.SinceProgress(record_));
    record_.progress_at = absl::InfinitePast();
  } else if (job.state() != RUNNING) {
    record_.progress_at = registry_.Now();
  }
  job.set_state(state);
  if (!error.empty()) job.set_error(error);
  if (IsTerminal(state)) {
    ended_ = true;
    job.set_end_time_unix_ms(absl::ToUnixMillis(registry_.Now()));
    job.mutable_progress()->clear_evaluating();  // a job cancelled mid-evaluation
    record_.data.reset();                        // the data set is only needed while training
  }
  registry_.Persist(record_, /*force=*/true);
  registry_.UpdateCounts();
  registry_.Notify(job);
}

void JobRegistry::Locked::SetProgress(const JobProgress& progress) {
  *record_.job.mutable_progress() = progress;
  if (record_.job.state() == RUNNING) record_.progress_at = registry_.Now();
}

void JobRegistry::Locked::AddRecovery(const std::string& cause, int64_t from_step) {
  Recovery& r = *record_.job.add_recoveries();
  r.set_time_unix_ms(absl::ToUnixMillis(registry_.Now()));
  r.set_cause(cause);
  r.set_from_step(from_step);
  r.set_lost_steps(std::max<int64_t>(0, record_.job.progress().step() - from_step));
  std::fprintf(stderr, "hpt_coordinator: %s goes back to step %lld: %s\n",
               record_.job.job_id().c_str(), static_cast<long long>(from_step), cause.c_str());
}

void JobRegistry::Locked::Notify() { registry_.Notify(record_.job); }

void JobRegistry::Locked::Persist(bool force) { registry_.Persist(record_, force); }

void JobRegistry::Locked::AbortClients(const absl::Status& reason) {
  for (WorkerClient* client : record_.clients) client->Abort(reason);
}

bool JobRegistry::Locked::stopping() const { return registry_.stopping_; }

absl::Status JobRegistry::Update(const std::string& job_id,
                                 absl::FunctionRef<absl::Status(Locked&)> fn) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  Locked locked(*this, *record);
  absl::Status status = fn(locked);
  if (locked.ended_) ForgetOldJobs();
  return status;
}

void JobRegistry::UpdateAll(absl::FunctionRef<void(Locked&)> fn) {
  absl::MutexLock lock(&mu_);
  bool ended = false;
  for (auto& [id, record] : jobs_) {
    Locked locked(*this, *record);
    fn(locked);
    ended |= locked.ended_;
  }
  if (ended) ForgetOldJobs();
}

void JobRegistry::Add(Job job, const std::string& request_id, bool persist) {
  absl::MutexLock lock(&mu_);
  auto record = std::make_unique<Record>();
  record->job = std::move(job);
  const std::string id = record->job.job_id();
  if (persist) Persist(*record, /*force=*/true);
  jobs_[id] = std::move(record);
  if (!request_id.empty()) request_ids_[request_id] = id;
  UpdateCounts();
  ForgetOldJobs();
}

absl::StatusOr<JobRegistry::Record*> JobRegistry::Find(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
  }
  return it->second.get();
}

absl::Time JobRegistry::Now() const { return options_.now ? options_.now() : absl::Now(); }

double JobRegistry::SinceProgress(const Record& record) const {
  if (record.job.state() != RUNNING || record.progress_at == absl::InfinitePast()) return 0;
  return std::max(0.0, absl::ToDoubleSeconds(Now() - record.progress_at));
}

Job JobRegistry::Current(const Record& record) const {
  Job job = record.job;
  if (const double since = SinceProgress(record); since > 0) {
    job.mutable_progress()->set_elapsed_s(job.progress().elapsed_s() + since);
  }
  return job;
}

absl::StatusOr<Job> JobRegistry::Get(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  return Current(*record);
}

std::vector<Job> JobRegistry::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<Job> jobs;
  for (const auto& [id, record] : jobs_) jobs.push_back(Current(*record));
  return jobs;
}

std::optional<Job> JobRegistry::JobOfRequest(const std::string& request_id) const {
  if (request_id.empty()) return std::nullopt;
  absl::MutexLock lock(&mu_);
  auto it = request_ids_.find(request_id);
  if (it == request_ids_.end()) return std::nullopt;
  absl::StatusOr<Record*> record = Find(it->second);
  if (!record.ok()) return std::nullopt;
  return Current(**record);
}

bool JobRegistry::Cancelled(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Record*> record = Find(job_id);
  return !record.ok() || (*record)->cancel_requested;
}

int64_t JobRegistry::NextJobNumber() {
  absl::MutexLock lock(&mu_);
  return next_job_++;
}

void JobRegistry::SetStopping() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

void JobRegistry::Recount() {
  absl::MutexLock lock(&mu_);
  UpdateCounts();
}

absl::Status JobRegistry::Forget(const std::string& job_id,
                                 absl::FunctionRef<absl::Status(const Record&)> check) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  RETURN_IF_ERROR(check(*record));
  absl::Status status = ForgetLocked(job_id);
  UpdateCounts();
  return status;
}

void JobRegistry::Notify(const Job& job) {
  auto range = watchers_.equal_range(job.job_id());
  for (auto it = range.first; it != range.second; ++it) it->second.second(job);
  if (options_.metrics != nullptr) options_.metrics->ObserveJob(job);
}

void JobRegistry::Persist(Record& record, bool force) {
  if (options_.store == nullptr) return;
  const absl::Time now = Now();
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
      ForgetLocked(id).IgnoreError();
      --finished;
    } else {
      ++it;
    }
  }
}

absl::Status JobRegistry::ForgetLocked(const std::string& job_id) {
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

absl::StatusOr<int64_t> JobRegistry::Watch(const std::string& job_id, Watcher watcher) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  const int64_t token = next_token_++;
  watcher(record->job);
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
