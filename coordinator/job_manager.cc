#include "coordinator/job_manager.h"

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "coordinator/job_data.h"
#include "coordinator/job_spec.h"
#include "coordinator/trainer.h"

namespace hpt {

bool JobManager::IsTerminal(JobState state) {
  return state == SUCCEEDED || state == FAILED || state == CANCELLED;
}

JobManager::JobManager(Options options, WorkerPool* pool)
    : options_(std::move(options)), pool_(pool) {
  if (options_.store != nullptr) {
    absl::MutexLock lock(&mu_);
    Recover();
  }
  scheduler_ = std::thread([this] { SchedulerLoop(); });
  monitor_ = std::thread([this] { MonitorLoop(); });
}

void JobManager::MonitorLoop() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(250))) {
    for (auto& [id, record] : jobs_) {
      std::string down;
      for (WorkerClient* client : record->clients) {
        if (pool_->IsUp(client->address())) continue;
        down = client->address();
        client->Abort(absl::UnavailableError(absl::StrCat(
            "worker ", down, " stopped answering (no heartbeat within the liveness timeout)")));
      }
      if (down.empty()) continue;
      // Its peers' calls (a collective waiting for it) end too; the step
      // is replayed from the checkpoint.
      for (WorkerClient* client : record->clients) {
        if (client->address() == down) continue;
        client->Abort(absl::AbortedError(
            absl::StrCat("the step was abandoned: worker ", down, " stopped answering")));
      }
      record->clients.clear();
    }
  }
}

void JobManager::Recover() {
  absl::StatusOr<std::vector<Job>> stored = options_.store->LoadAll();
  if (!stored.ok()) {
    std::fprintf(stderr, "hpt_coordinator: %s\n", std::string(stored.status().message()).c_str());
    return;
  }
  for (Job& job : *stored) {
    auto record = std::make_unique<Record>();
    const std::string id = job.job_id();
    record->job = std::move(job);
    if (!IsTerminal(record->job.state())) {
      // Its data set was in memory: load it again, then queue the job.
      // (A job that was LOADING simply loads again.)
      const bool was_running = record->job.state() == RUNNING;
      DataSummary summary;
      absl::StatusOr<WindowDataset> data =
          LoadData(id, record->job.spec().data(), &summary, /*cancellable=*/false);
      if (!data.ok()) {
        record->job.set_state(FAILED);
        record->job.set_error(absl::StrCat("after a coordinator restart its data did not load: ",
                                           data.status().message()));
        record->job.set_end_time_unix_ms(absl::ToUnixMillis(absl::Now()));
      } else {
        record->data = std::make_unique<WindowDataset>(std::move(*data));
        record->job.set_state(QUEUED);
        record->job.clear_workers();
        if (was_running) {
          // Its newest checkpoint file, if any (RunJob reads it).
          std::vector<CheckpointInfo> kept;
          if (!options_.state_dir.empty()) {
            kept = ListCheckpoints(CheckpointDir(options_.state_dir, id));
          }
          const int64_t from = kept.empty() ? 0 : kept.back().step();
          AddRecovery(*record,
                      kept.empty() ? "the coordinator restarted; no checkpoint, so from the start"
                                   : "the coordinator restarted",
                      from);
          if (kept.empty()) {
            record->job.clear_progress();
            record->job.clear_epoch_losses();
          }
        }
        queue_.push_back(id);
      }
      Persist(*record, /*force=*/true);
    }
    jobs_[id] = std::move(record);
  }
  std::fprintf(stderr, "hpt_coordinator: %zu job(s) from %s, %zu queued again\n", jobs_.size(),
               options_.store->path().c_str(), queue_.size());
  UpdateCounts();
}

void JobManager::Persist(Record& record, bool force) {
  if (options_.store == nullptr) return;
  const absl::Time now = absl::Now();
  if (!force && now - record.persisted < absl::Seconds(1)) return;
  record.persisted = now;
  if (absl::Status s = options_.store->Put(record.job); !s.ok()) {
    std::fprintf(stderr, "hpt_coordinator: %s\n", std::string(s.message()).c_str());
  }
}

JobManager::~JobManager() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, record] : jobs_) {
      record->cancel_requested = true;
      for (WorkerClient* client : record->clients) {
        client->Abort(absl::CancelledError("the coordinator is stopping"));
      }
    }
  }
  scheduler_.join();
  monitor_.join();
}

absl::StatusOr<JobManager::Record*> JobManager::Find(
    const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
  }
  return it->second.get();
}

absl::StatusOr<Job> JobManager::Submit(const SubmitJobRequest& request,
                                       const std::string& owner) {
  {
    absl::MutexLock lock(&mu_);
    if (!request.request_id().empty()) {
      auto it = request_ids_.find(request.request_id());
      if (it != request_ids_.end()) {
        ASSIGN_OR_RETURN(Record * existing, Find(it->second));
        return existing->job;
      }
    }
  }
  JobSpec spec = request.spec();
  if (!request.spec_text().empty()) {
    if (request.has_spec()) {
      return absl::InvalidArgumentError(
          "SubmitJobRequest: give spec or spec_text, not both");
    }
    ASSIGN_OR_RETURN(spec, ParseJobSpecText(request.spec_text()));
  }
  ASSIGN_OR_RETURN(spec, NormalizeJobSpec(std::move(spec)));
  // Paths outside the data roots, FIFOs, devices and missing files are
  // refused before the job exists.
  RETURN_IF_ERROR(CheckJobDataPaths(spec.data(), options_.data_limits));

  int64_t number = 0;
  if (options_.store != nullptr) {
    ASSIGN_OR_RETURN(number, options_.store->NextJobNumber());
  }
  std::string id;
  {
    absl::MutexLock lock(&mu_);
    auto record = std::make_unique<Record>();
    if (options_.store == nullptr) number = next_job_++;
    id = absl::StrFormat("job-%06d", number);
    record->job.set_job_id(id);
    record->job.set_name(spec.name());
    record->job.set_owner(owner);
    *record->job.mutable_spec() = spec;
    record->job.set_state(LOADING);
    record->job.set_create_time_unix_ms(absl::ToUnixMillis(absl::Now()));
    Persist(*record, /*force=*/true);
    jobs_[id] = std::move(record);
    if (!request.request_id().empty()) request_ids_[request.request_id()] = id;
    if (options_.metrics != nullptr) {
      options_.metrics->jobs_submitted.Add({}).Increment();
    }
    UpdateCounts();
    ForgetOldJobs();
  }
  // The data and the model it implies are checked now: their errors are
  // the submitter's to fix, and come back in this reply.
  DataSummary summary;
  return FinishLoading(id, LoadData(id, spec.data(), &summary, /*cancellable=*/true), summary,
                       "its data did not load");
}

absl::StatusOr<WindowDataset> JobManager::LoadData(const std::string& job_id,
                                                   const DataSpec& spec, DataSummary* summary,
                                                   bool cancellable) {
  DataLimits limits = options_.data_limits;
  limits.deadline = absl::Now() + options_.max_load_time;
  if (cancellable) {
    limits.cancelled = [this, job_id] {
      absl::MutexLock lock(&mu_);
      absl::StatusOr<Record*> record = Find(job_id);
      return !record.ok() || (*record)->cancel_requested;
    };
  }
  return BuildJobData(spec, summary, limits);
}

absl::StatusOr<Job> JobManager::FinishLoading(const std::string& job_id,
                                              absl::StatusOr<WindowDataset> data,
                                              const DataSummary& summary, const char* what) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  absl::Status status = data.status();
  if (status.ok()) {
    const JobSpec& spec = record->job.spec();
    status = ResolveModelConfig(spec.model(), data->input_features(), data->output_features())
                 .status();
  }
  if (record->cancel_requested) {
    // Cancel already ended it.
    return absl::CancelledError(absl::StrCat("job '", job_id, "' was cancelled while loading"));
  }
  if (!status.ok()) {
    SetState(*record, FAILED, absl::StrCat(what, ": ", status.message()));
    return status;
  }
  record->data = std::make_unique<WindowDataset>(std::move(*data));
  *record->job.mutable_data() = summary;
  queue_.push_back(job_id);
  SetState(*record, QUEUED, "");
  return record->job;
}

absl::StatusOr<Job> JobManager::Get(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  return record->job;
}

std::vector<Job> JobManager::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<Job> jobs;
  for (const auto& [id, record] : jobs_) jobs.push_back(record->job);
  return jobs;
}

absl::StatusOr<Job> JobManager::Cancel(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  if (IsTerminal(record->job.state())) return record->job;  // idempotent
  record->cancel_requested = true;
  // Calls in flight end now, not at the step's end.
  for (WorkerClient* client : record->clients) {
    client->Abort(absl::CancelledError("cancelled by request"));
  }
  if (record->job.state() == QUEUED) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
    SetState(*record, CANCELLED, "cancelled before it started");
  } else if (record->job.state() == LOADING) {
    // Its loader stops at its next check and leaves the job as it is.
    SetState(*record, CANCELLED, "cancelled while its data loaded");
  }
  // A running job stops at its next step boundary (see RunJob).
  return record->job;
}

absl::StatusOr<int64_t> JobManager::Watch(const std::string& job_id,
                                          Watcher watcher) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  const int64_t token = next_token_++;
  watcher(record->job);
  watchers_.emplace(job_id, std::make_pair(token, std::move(watcher)));
  return token;
}

void JobManager::Unwatch(int64_t token) {
  absl::MutexLock lock(&mu_);
  for (auto it = watchers_.begin(); it != watchers_.end(); ++it) {
    if (it->second.first == token) {
      watchers_.erase(it);
      return;
    }
  }
}

void JobManager::Notify(const Job& job) {
  auto range = watchers_.equal_range(job.job_id());
  for (auto it = range.first; it != range.second; ++it) it->second.second(job);
  if (options_.metrics != nullptr) options_.metrics->ObserveJob(job);
}

void JobManager::SetState(Record& record, JobState state,
                          const std::string& error) {
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

absl::StatusOr<std::shared_ptr<const TrainedModel>> JobManager::TrainedModelOf(
    const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Record * record, Find(job_id));
  if (record->trained == nullptr && record->job.state() == SUCCEEDED &&
      !options_.state_dir.empty()) {
    // Trained before a restart: its model is on disk.
    absl::StatusOr<Checkpoint> file = ReadCheckpoint(ModelDir(job_id));
    if (file.ok()) {
      auto trained = std::make_shared<TrainedModel>();
      trained->config = file->header.model();
      trained->parameters = TensorsUnder(*file, "model/");
      record->trained = std::move(trained);
    }
  }
  if (record->trained == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job '", job_id, "' is ", JobState_Name(record->job.state()),
        "; only a succeeded job has a model to export"));
  }
  return record->trained;
}

std::string JobManager::ModelDir(const std::string& job_id) const {
  return absl::StrCat(options_.state_dir, "/models/", job_id);
}

void JobManager::UpdateCounts() {
  if (options_.metrics == nullptr) return;
  std::map<JobState, int> counts;
  for (const auto& [id, record] : jobs_) ++counts[record->job.state()];
  options_.metrics->SetJobCounts(counts);
}

void JobManager::ForgetOldJobs() {
  int finished = 0;
  for (const auto& [id, record] : jobs_) finished += IsTerminal(record->job.state());
  for (auto it = jobs_.begin();
       it != jobs_.end() && finished > options_.max_retained_jobs;) {
    if (IsTerminal(it->second->job.state()) &&
        watchers_.count(it->first) == 0) {
      if (options_.metrics != nullptr) options_.metrics->ForgetJob(it->first);
      if (options_.store != nullptr) options_.store->Remove(it->first).IgnoreError();
      if (!options_.state_dir.empty()) {
        RemoveCheckpoints(CheckpointDir(options_.state_dir, it->first));
        RemoveCheckpoints(ModelDir(it->first));
      }
      it = jobs_.erase(it);
      --finished;
    } else {
      ++it;
    }
  }
}

void JobManager::SchedulerLoop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(
        +[](JobManager* m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(m->mu_) {
          return m->stopping_ || !m->finished_runners_.empty() ||
                 (!m->queue_.empty() && m->running_ < std::max(1, m->options_.max_running_jobs));
        },
        this));
    // Join the runners that are done.
    for (int64_t id : finished_runners_) {
      std::thread t = std::move(runners_[id]);
      runners_.erase(id);
      mu_.Unlock();
      t.join();
      mu_.Lock();
    }
    finished_runners_.clear();
    if (stopping_) break;
    if (queue_.empty() || running_ >= std::max(1, options_.max_running_jobs)) continue;
    const std::string job_id = queue_.front();
    queue_.pop_front();
    ++running_;
    const int64_t id = next_runner_++;
    runners_[id] = std::thread([this, job_id, id] {
      RunJob(job_id);
      absl::MutexLock done(&mu_);
      --running_;
      finished_runners_.push_back(id);
    });
  }
  // Stopping: every running job was asked to cancel; wait for them.
  std::map<int64_t, std::thread> left = std::move(runners_);
  mu_.Unlock();
  for (auto& [id, t] : left) t.join();
  mu_.Lock();
}

namespace {

// A step failed because a worker is gone or lost the job: worth going back
// to a checkpoint on the workers still live.
bool IsWorkerLoss(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
      return true;
    case absl::StatusCode::kFailedPrecondition:
      // A restarted worker (worker_service.h) no longer holds the job.
      return absl::StrContains(s.message(), "call LoadParameters first");
    default:
      return false;
  }
}

}  // namespace

void JobManager::AddRecovery(Record& record, const std::string& cause, int64_t from_step) {
  Recovery& r = *record.job.add_recoveries();
  r.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
  r.set_cause(cause);
  r.set_from_step(from_step);
  r.set_lost_steps(std::max<int64_t>(0, record.job.progress().step() - from_step));
  std::fprintf(stderr, "hpt_coordinator: %s goes back to step %lld: %s\n",
               record.job.job_id().c_str(), static_cast<long long>(from_step), cause.c_str());
}

std::shared_ptr<const Checkpoint> JobManager::LatestCheckpoint(const std::string& job_id) {
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Record*> record = Find(job_id);
    if (record.ok() && (*record)->checkpoint != nullptr) return (*record)->checkpoint;
  }
  if (options_.state_dir.empty()) return nullptr;
  absl::StatusOr<Checkpoint> read = ReadCheckpoint(CheckpointDir(options_.state_dir, job_id));
  if (!read.ok()) {
    if (read.status().code() != absl::StatusCode::kNotFound) {
      std::fprintf(stderr, "hpt_coordinator: %s\n", std::string(read.status().message()).c_str());
    }
    return nullptr;
  }
  return std::make_shared<const Checkpoint>(std::move(*read));
}

void JobManager::RunJob(const std::string& job_id) {
  JobSpec spec;
  const WindowDataset* data = nullptr;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Record*> record = Find(job_id);
    if (!record.ok() || (*record)->job.state() != QUEUED) return;
    spec = (*record)->job.spec();
    data = (*record)->data.get();
    SetState(**record, RUNNING, "");
  }
  std::shared_ptr<const Checkpoint> resume = LatestCheckpoint(job_id);
  absl::Status status;
  for (int failovers = 0;; ++failovers) {
    bool trained = false;
    status = Attempt(job_id, spec, data, resume, failovers > 0, &trained);
    // Only a loss while training goes back to a checkpoint; a wait for
    // workers that ran out is final.
    if (status.ok() || !trained || !IsWorkerLoss(status) ||
        failovers >= options_.max_failovers) {
      break;
    }
    resume = LatestCheckpoint(job_id);
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Record*> record = Find(job_id);
    if (!record.ok() || (*record)->cancel_requested) break;
    AddRecovery(**record, std::string(status.message()),
                resume != nullptr ? resume->header.step() : 0);
    (*record)->job.clear_workers();
    Persist(**record, /*force=*/true);
    Notify((*record)->job);
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Record*> record = Find(job_id);
  if (!record.ok()) return;
  if (status.ok()) {
    SetState(**record, SUCCEEDED, "");
  } else if ((*record)->cancel_requested && !absl::IsCancelled(status)) {
    // The cancel's abort ended a call first: the job was cancelled.
    SetState(**record, CANCELLED, "cancelled by request");
  } else if (status.code() == absl::StatusCode::kCancelled) {
    SetState(**record, CANCELLED, std::string(status.message()));
  } else {
    SetState(**record, FAILED, std::string(status.message()));
  }
  ForgetOldJobs();
}

absl::Status JobManager::Attempt(const std::string& job_id, const JobSpec& spec,
                                 const WindowDataset* data,
                                 std::shared_ptr<const Checkpoint> resume, bool failover,
                                 bool* trained) {
  // Polled while waiting for workers (a cancel ends the wait at once, not
  // after worker_wait) and by the trainer at every step boundary.
  auto cancelled = [this, job_id] {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Record*> record = Find(job_id);
    return !record.ok() || (*record)->cancel_requested;
  };
  const int width = spec.placement().gpu_workers();
  absl::StatusOr<std::vector<WorkerEntry>> entries =
      pool_->WaitFor("gpu", failover ? 1 : width, options_.worker_wait, cancelled);
  if (!entries.ok()) return entries.status();
  if (failover) {
    // A data-parallel group shrinks to the GPU workers live now.
    std::vector<WorkerEntry> live = pool_->Live("gpu");
    if (live.size() > size_t(width)) live.resize(width);
    if (live.size() > entries->size()) *entries = std::move(live);
  }
  const std::string& head_kind = spec.placement().head_device();
  if (head_kind != "gpu" && !head_kind.empty()) {
    absl::StatusOr<std::vector<WorkerEntry>> head_entry =
        pool_->WaitFor(head_kind, 1, options_.worker_wait, cancelled);
    if (!head_entry.ok()) return head_entry.status();
    entries->push_back(head_entry->front());
  }
  // The LoRA phase's device placement needs a ReRAM and a systolic worker;
  // it uses every one registered.
  const HptSpec& hpt = spec.hpt();
  const bool devices = hpt.mode() == "hpt" && hpt.placement() != "gpu";
  if (devices) {
    for (const char* kind : {"reram", "systolic"}) {
      absl::StatusOr<std::vector<WorkerEntry>> some =
          pool_->WaitFor(kind, 1, options_.worker_wait, cancelled);
      if (some.status().code() == absl::StatusCode::kCancelled) return some.status();
      if (!some.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "hpt.placement '", hpt.placement(), "' needs a ", kind,
            " worker for the LoRA phase: ", some.status().message(),
            " (or submit with hpt.placement gpu)"));
      }
      for (const WorkerEntry& e : pool_->Live(kind)) entries->push_back(e);
    }
  }
  std::vector<std::unique_ptr<WorkerClient>> clients;
  std::vector<WorkerClient*> raw;
  Trainer::Options trainer_options;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Record*> record = Find(job_id);
    if (record.ok()) (*record)->job.clear_workers();
    for (size_t i = 0; i < entries->size(); ++i) {
      const WorkerEntry& e = (*entries)[i];
      clients.push_back(options_.client_factory(e.address, e.kind));
      WorkerClient* client = clients.back().get();
      if (e.kind == "gpu") {
        raw.push_back(client);
      } else if (devices && e.kind == "reram") {
        trainer_options.reram_workers.push_back(client);
      } else if (devices && e.kind == "systolic") {
        trainer_options.systolic_workers.push_back(client);
      } else {
        trainer_options.head_worker = client;
      }
      if (record.ok()) (*record)->job.add_workers(e.address);
    }
    if (record.ok()) {
      for (auto& c : clients) (*record)->clients.push_back(c.get());
    }
    if (record.ok() && failover && (*record)->job.recoveries_size() > 0) {
      Job& job = (*record)->job;
      Recovery* last = job.mutable_recoveries(job.recoveries_size() - 1);
      for (const WorkerEntry& e : *entries) last->add_workers(e.address);
    }
  }
  auto release = [&] {
    {
      absl::MutexLock lock(&mu_);
      absl::StatusOr<Record*> record = Find(job_id);
      if (record.ok()) (*record)->clients.clear();
    }
    for (auto& client : clients) client->Release(job_id).IgnoreError();
  };
  if (raw.size() > 1 && options_.rendezvous) {
    absl::StatusOr<RendezvousStore*> store = options_.rendezvous();
    if (!store.ok()) {
      release();
      return store.status();
    }
    trainer_options.rendezvous = *store;
  }
  trainer_options.cancelled = cancelled;
  trainer_options.resume = std::move(resume);
  const TrainingSpec& training = spec.training();
  trainer_options.checkpoint_every = training.checkpoint_every();
  trainer_options.on_checkpoint = [this, job_id, keep = training.checkpoints_kept()](
                                      Checkpoint checkpoint) {
    auto shared = std::make_shared<const Checkpoint>(std::move(checkpoint));
    if (!options_.state_dir.empty()) {
      absl::StatusOr<CheckpointInfo> written =
          WriteCheckpoint(CheckpointDir(options_.state_dir, job_id), *shared, keep);
      if (!written.ok()) {
        std::fprintf(stderr, "hpt_coordinator: %s: checkpoint at step %lld not written: %s\n",
                     job_id.c_str(), static_cast<long long>(shared->header.step()),
                     std::string(written.status().message()).c_str());
      }
    }
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Record*> record = Find(job_id);
    if (!record.ok()) return;
    (*record)->checkpoint = shared;
    (*record)->job.set_checkpoint_step(shared->header.step());
    Persist(**record, /*force=*/true);
  };
  trainer_options.on_progress = [this, job_id](const TrainerUpdate& update) {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Record*> record = Find(job_id);
    if (!record.ok()) return;
    Job& job = (*record)->job;
    *job.mutable_progress() = update.progress;
    job.clear_epoch_losses();
    for (double l : update.epoch_losses) job.add_epoch_losses(l);
    *job.mutable_cost() = update.cost;
    job.clear_device_costs();
    for (const DeviceCost& d : update.device_costs) *job.add_device_costs() = d;
    *job.mutable_test_metrics() = update.test_metrics;
    *job.mutable_hpt() = update.hpt;
    Persist(**record, /*force=*/false);
    Notify(job);
  };
  Trainer trainer(job_id, spec, data, raw, trainer_options);
  *trained = true;
  absl::Status status = trainer.Run();
  if (status.ok()) {
    auto trained = std::make_shared<TrainedModel>(trainer.trained_model());
    if (!options_.state_dir.empty()) {
      // The model outlives the coordinator: export works after a restart.
      Checkpoint file;
      file.header.set_job_id(job_id);
      file.header.set_step(std::max<int64_t>(1, spec.training().epochs()));
      file.header.set_reason("trained model");
      *file.header.mutable_model() = trained->config;
      for (const auto& [name, t] : trained->parameters) file.tensors["model/" + name] = t;
      absl::StatusOr<CheckpointInfo> written = WriteCheckpoint(ModelDir(job_id), file, 1);
      if (!written.ok()) {
        std::fprintf(stderr, "hpt_coordinator: %s: trained model not written: %s\n",
                     job_id.c_str(), std::string(written.status().message()).c_str());
      }
    }
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Record*> record = Find(job_id);
    if (record.ok()) {
      (*record)->trained = std::move(trained);
      (*record)->checkpoint.reset();
    }
  }
  release();
  return status;
}

absl::StatusOr<std::vector<CheckpointInfo>> JobManager::Checkpoints(
    const std::string& job_id) const {
  std::shared_ptr<const Checkpoint> in_memory;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(Record * record, Find(job_id));
    in_memory = record->checkpoint;
  }
  if (!options_.state_dir.empty()) return ListCheckpoints(CheckpointDir(options_.state_dir, job_id));
  std::vector<CheckpointInfo> out;
  if (in_memory != nullptr) out.push_back(InfoOf(in_memory->header, 0));
  return out;
}

absl::StatusOr<Job> JobManager::Resume(const std::string& job_id, int64_t step) {
  if (step > 0 && options_.state_dir.empty()) {
    return absl::FailedPreconditionError(
        "the coordinator keeps no checkpoint files (start it with --state_dir); resume "
        "without a step takes the newest checkpoint in memory");
  }
  std::shared_ptr<const Checkpoint> from;
  if (step > 0) {
    ASSIGN_OR_RETURN(Checkpoint read,
                     ReadCheckpoint(CheckpointDir(options_.state_dir, job_id), step));
    from = std::make_shared<const Checkpoint>(std::move(read));
  } else {
    from = LatestCheckpoint(job_id);
  }
  JobSpec spec;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(Record * record, Find(job_id));
    const JobState state = record->job.state();
    if (state != FAILED && state != CANCELLED) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job '", job_id, "' is ", JobState_Name(state),
          "; only a failed or cancelled job can be resumed"));
    }
    spec = record->job.spec();
    record->checkpoint = from;
    record->cancel_requested = false;
    const int64_t from_step = from != nullptr ? from->header.step() : 0;
    AddRecovery(*record,
                from != nullptr ? "resumed by request"
                                : "resumed by request; no checkpoint, so from the start",
                from_step);
    if (from == nullptr) {
      record->job.clear_progress();
      record->job.clear_epoch_losses();
    }
    record->job.clear_error();
    record->job.set_end_time_unix_ms(0);
    record->job.clear_workers();
    // The data set was dropped when the job ended: it loads again.
    SetState(*record, LOADING, "");
  }
  DataSummary summary;
  return FinishLoading(job_id, LoadData(job_id, spec.data(), &summary, /*cancellable=*/true),
                       summary, "on resume its data did not load");
}

}  // namespace hpt
