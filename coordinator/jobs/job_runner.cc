#include "coordinator/jobs/job_runner.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/device_kind.h"

namespace hpt {
namespace {

// The failover limit reached: why the job ends FAILED, and what to do.
absl::Status GaveUp(const std::string& job_id, int limit, const absl::Status& last) {
  return absl::UnavailableError(
      absl::StrCat("a worker was lost ", limit + 1, " times in a row without a finished step",
                   " between (the limit is ", limit, " failovers); the last loss: ", last.message(),
                   ". Once the workers are back, hptctl resume ", job_id,
                   " goes on from its newest checkpoint"));
}

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

void LogError(const std::string& job_id, const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "hpt_coordinator: %s: %s: %s\n", job_id.c_str(), what.c_str(),
               std::string(s.message()).c_str());
}

}  // namespace

JobRunner::JobRunner(Options options, JobRegistry* registry, WorkerPool* pool)
    : options_(std::move(options)), registry_(registry), pool_(pool) {
  monitor_ = std::thread([this] { MonitorLoop(); });
}

JobRunner::~JobRunner() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  monitor_.join();
}

void JobRunner::MonitorLoop() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(250))) {
    registry_->UpdateAll([&](JobRegistry::Locked& locked) {
      JobRegistry::Record* record = &locked.record();
      std::string down;
      for (WorkerClient* client : record->clients) {
        if (pool_->IsUp(client->address())) continue;
        down = client->address();
        client->Abort(absl::UnavailableError(absl::StrCat(
            "worker ", down, " stopped answering (no heartbeat within the liveness timeout)")));
      }
      if (down.empty()) return;
      // Its peers' calls (a collective waiting for it) end too; the step
      // is replayed from the checkpoint.
      for (WorkerClient* client : record->clients) {
        if (client->address() == down) continue;
        client->Abort(absl::AbortedError(
            absl::StrCat("the step was abandoned: worker ", down, " stopped answering")));
      }
      record->clients.clear();
    });
  }
}

std::shared_ptr<const Checkpoint> JobRunner::LatestCheckpoint(const std::string& job_id) {
  std::shared_ptr<const Checkpoint> in_memory;
  registry_
      ->Update(job_id,
               [&](JobRegistry::Locked& r) {
                 in_memory = r.record().checkpoint;
                 return absl::OkStatus();
               })
      .IgnoreError();  // no record: none in memory
  if (in_memory != nullptr) return in_memory;
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

void JobRunner::Run(const std::string& job_id) {
  JobSpec spec;
  const WindowDataset* data = nullptr;
  absl::Status queued = registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    if (r.job().state() != QUEUED) return absl::FailedPreconditionError("not queued");
    spec = r.job().spec();
    data = r.record().data.get();
    r.SetState(RUNNING, "");
    return absl::OkStatus();
  });
  if (!queued.ok()) return;
  std::shared_ptr<const Checkpoint> resume = LatestCheckpoint(job_id);
  absl::Status status;
  for (int attempt = 0, failovers = 0;; ++attempt) {
    const int64_t from_step = resume != nullptr ? resume->header.step() : 0;
    const AttemptEnd end = Attempt(job_id, spec, data, resume, attempt > 0);
    status = end.status;
    // An attempt that finished a step past its checkpoint made progress:
    // the failover limit counts losses in a row, not in a job's lifetime.
    // (The job's own progress cannot tell: it still holds the step a
    // failed attempt reached before going back.)
    if (end.reached_step > from_step) failovers = 0;
    // A call a worker ended CANCELLED (its server stopping: a node's
    // processes signalled) while nothing here cancelled the job (a cancel
    // by request, or the coordinator stopping, which cancels every job) is
    // a worker lost, as one that stopped answering is.
    const bool cancelled_here = absl::IsCancelled(status) && registry_->Cancelled(job_id);
    const bool lost = IsWorkerLoss(status) || (absl::IsCancelled(status) && !cancelled_here);
    // Only a loss while training goes back to a checkpoint; a wait for
    // workers that ran out is final. Going back to the planned placement
    // (its devices returned) is no failure, and not counted as one.
    if (status.ok() || !end.trained || !lost) break;
    if (!end.returned && failovers++ >= options_.max_failovers) {
      // The job failed: a worker's CANCELLED (its server stopping) must
      // not end it CANCELLED, since nobody cancelled it.
      status = GaveUp(job_id, options_.max_failovers, status);
      break;
    }
    resume = LatestCheckpoint(job_id);
    const absl::Status again = registry_->Update(job_id, [&](JobRegistry::Locked& r) {
      if (r.record().cancel_requested) {
        return absl::CancelledError("cancelled while recovering from a worker's failure");
      }
      r.AddRecovery(std::string(status.message()), resume != nullptr ? resume->header.step() : 0);
      r.job().clear_workers();
      r.Persist(/*force=*/true);
      r.Notify();
      return absl::OkStatus();
    });
    if (!again.ok()) break;
  }
  registry_
      ->Update(job_id,
               [&](JobRegistry::Locked& r) {
                 End(job_id, status, r);
                 return absl::OkStatus();
               })
      .IgnoreError();  // forgotten meanwhile: nothing to end
}

void JobRunner::End(const std::string& job_id, const absl::Status& status, JobRegistry::Locked& r) {
  if (status.ok()) {
    r.SetState(SUCCEEDED, "");
  } else if (r.stopping()) {
    // Left as the store has it (running, or queued): a restart on the same
    // state resumes it from its newest checkpoint.
    std::fprintf(stderr,
                 "hpt_coordinator: %s stays unfinished as the coordinator stops; "
                 "starting it again on this state resumes it\n",
                 job_id.c_str());
  } else if (r.record().cancel_requested && absl::IsCancelled(status) &&
             !absl::EndsWith(status.message(), kCancelledByRequest)) {
    // Ended where the job checks for a cancel: its words say where.
    r.SetState(CANCELLED, std::string(status.message()));
  } else if (r.record().cancel_requested) {
    // The cancel's abort cut a worker's call (named by that call) or made
    // it fail otherwise: the user cancelled it.
    const JobProgress& p = r.job().progress();
    r.SetState(
        CANCELLED,
        absl::StrCat("cancelled by request after step ", p.step(),
                     p.evaluating().empty() ? "" : absl::StrCat(", evaluating ", p.evaluating())));
  } else if (status.code() == absl::StatusCode::kCancelled) {
    r.SetState(CANCELLED, std::string(status.message()));
  } else {
    r.SetState(FAILED, std::string(status.message()));
  }
}

absl::StatusOr<std::vector<WorkerEntry>> JobRunner::WaitForKind(
    const std::string& job_id, DeviceKind::Name kind, int count, absl::Duration wait,
    const std::string& what, const std::string& then, const std::function<bool()>& cancelled) {
  const int have = int(pool_->Live(kind).size());
  auto say = [&](const std::string& text) {
    registry_
        ->Update(job_id,
                 [&](JobRegistry::Locked& r) {
                   if (r.job().waiting_for() == text) return absl::OkStatus();
                   r.job().set_waiting_for(text);
                   r.Notify();
                   return absl::OkStatus();
                 })
        .IgnoreError();  // forgotten meanwhile: nobody to tell
  };
  // Said at once, so status and hpt_job_waiting_for_workers show the wait.
  if (have < count) {
    say(absl::StrCat(what, ", up to ", absl::FormatDuration(wait), ", then ", then));
  }
  absl::StatusOr<std::vector<WorkerEntry>> found = pool_->WaitFor(kind, count, wait, cancelled);
  if (have < count) say("");
  return found;
}

absl::StatusOr<std::vector<WorkerEntry>> JobRunner::AcquireWorkers(
    const std::string& job_id, const JobSpec& spec, bool failover,
    const std::function<bool()>& cancelled, std::string* fallback_reason) {
  const int width = spec.placement().gpu_workers();
  const int need = failover ? 1 : width;
  absl::StatusOr<std::vector<WorkerEntry>> entries =
      WaitForKind(job_id, DeviceKind::gpu, need, options_.worker_wait,
                  absl::StrCat(need, need == 1 ? " GPU worker (" : " GPU workers (",
                               pool_->Live(DeviceKind::gpu).size(), " registered)"),
                  "it fails", cancelled);
  if (!entries.ok()) return entries.status();
  if (failover) {
    // A data-parallel group shrinks to the GPU workers live now.
    std::vector<WorkerEntry> live = pool_->Live(DeviceKind::gpu);
    if (live.size() > size_t(width)) live.resize(width);
    if (live.size() > entries->size()) *entries = std::move(live);
  }
  const DeviceKind::Name head_kind = spec.placement().head_device();
  if (head_kind != DeviceKind::gpu && head_kind != DeviceKind::DEVICE_KIND_UNSPECIFIED) {
    absl::StatusOr<std::vector<WorkerEntry>> head_entry =
        pool_->WaitFor(head_kind, 1, options_.worker_wait, cancelled);
    if (!head_entry.ok()) return head_entry.status();
    entries->push_back(head_entry->front());
  }
  // The LoRA phase's device placement needs a ReRAM and a systolic worker;
  // it uses every one registered. Without one after hpt.device_wait_s the
  // job goes on with its fallback placement.
  const HptSpec& hpt = spec.hpt();
  if (hpt.mode() == TrainingMode::hpt && hpt.placement() != Placement::gpu) {
    const bool fail = hpt.fallback_placement() == FallbackPlacement::fail;
    const absl::Duration wait =
        fail ? options_.worker_wait : absl::Seconds(hpt.device_wait_s());
    std::vector<WorkerEntry> devices;
    for (DeviceKind::Name kind : {DeviceKind::reram, DeviceKind::systolic}) {
      absl::StatusOr<std::vector<WorkerEntry>> some = WaitForKind(
          job_id, kind, 1, wait, absl::StrCat("a ", KindName(kind), " worker for the LoRA phase"),
          fail ? "fail" : "on the GPU workers", cancelled);
      if (some.status().code() == absl::StatusCode::kCancelled) return some.status();
      if (!some.ok() && fail) {
        return absl::FailedPreconditionError(
            absl::StrCat("hpt.placement ", Placement::Name_Name(hpt.placement()), " needs a ",
                         KindName(kind), " worker for the LoRA phase: ", some.status().message(),
                         " (or submit with hpt.placement gpu)"));
      }
      if (!some.ok()) {
        *fallback_reason =
            absl::StrCat("no ", KindName(kind), " worker within ", absl::FormatDuration(wait),
                         ": the LoRA phase runs on the GPU workers");
        return entries;
      }
      for (const WorkerEntry& e : pool_->Live(kind)) devices.push_back(e);
    }
    entries->insert(entries->end(), devices.begin(), devices.end());
  }
  return entries;
}

JobRunner::Workers JobRunner::Connect(const std::string& job_id,
                                      std::vector<WorkerEntry> entries, bool devices,
                                      bool failover) {
  Workers w;
  w.entries = std::move(entries);
  for (const WorkerEntry& e : w.entries) {
    w.clients.push_back(options_.client_factory(e.address, e.kind));
    WorkerClient* client = w.clients.back().get();
    if (e.kind == DeviceKind::gpu) {
      w.gpu.push_back(client);
      w.gpu_devices.push_back(e.device_id);
    } else if (devices && e.kind == DeviceKind::reram) {
      w.reram.push_back(client);
    } else if (devices && e.kind == DeviceKind::systolic) {
      w.systolic.push_back(client);
    } else {
      w.head = client;
    }
  }
  registry_
      ->Update(job_id,
               [&](JobRegistry::Locked& r) {
                 Job& job = r.job();
                 job.clear_workers();
                 for (const WorkerEntry& e : w.entries) job.add_workers(e.address);
                 for (auto& c : w.clients) r.record().clients.push_back(c.get());
                 if (failover && job.recoveries_size() > 0) {
                   Recovery* last = job.mutable_recoveries(job.recoveries_size() - 1);
                   for (const WorkerEntry& e : w.entries) last->add_workers(e.address);
                 }
                 return absl::OkStatus();
               })
      .IgnoreError();  // forgotten meanwhile: the attempt finds it cancelled
  return w;
}

void JobRunner::Wire(const std::string& job_id, const TrainingSpec& training,
                     std::function<bool()> cancelled, int64_t* reached_step,
                     Trainer::Options* options) {
  options->cancelled = std::move(cancelled);
  options->checkpoint_every = training.checkpoint_every();
  options->on_checkpoint = [this, job_id, keep = training.checkpoints_kept()](
                               Checkpoint checkpoint) {
    auto shared = std::make_shared<const Checkpoint>(std::move(checkpoint));
    if (!options_.state_dir.empty()) {
      absl::StatusOr<CheckpointInfo> written =
          WriteCheckpoint(CheckpointDir(options_.state_dir, job_id), *shared, keep);
      if (!written.ok()) {
        LogError(job_id,
                 absl::StrCat("checkpoint at step ", shared->header.step(), " not written"),
                 written.status());
      }
    }
    registry_
        ->Update(job_id,
                 [&](JobRegistry::Locked& r) {
                   r.record().checkpoint = shared;
                   r.job().set_checkpoint_step(shared->header.step());
                   r.Persist(/*force=*/true);
                   return absl::OkStatus();
                 })
        .IgnoreError();  // forgotten meanwhile
  };
  options->on_progress = [this, job_id, reached_step](const TrainerUpdate& update) {
    *reached_step = std::max(*reached_step, update.progress.step());
    registry_
        ->Update(job_id,
                 [&](JobRegistry::Locked& r) {
                   Job& job = r.job();
                   r.SetProgress(update.progress);
                   job.clear_epoch_losses();
                   for (double l : update.epoch_losses) job.add_epoch_losses(l);
                   *job.mutable_cost() = update.cost;
                   job.clear_device_costs();
                   for (const DeviceCost& d : update.device_costs) *job.add_device_costs() = d;
                   *job.mutable_test_metrics() = update.test_metrics;
                   *job.mutable_hpt() = update.hpt;
                   if (update.work_record != nullptr) r.record().work_record = update.work_record;
                   r.record().history = update.history;
                   r.Persist(/*force=*/false);
                   r.Notify();
                   return absl::OkStatus();
                 })
        .IgnoreError();  // forgotten meanwhile
  };
}

void JobRunner::KeepTrainedModel(const std::string& job_id, const JobSpec& spec,
                                 const TrainedModel& model) {
  auto trained = std::make_shared<TrainedModel>(model);
  if (!options_.state_dir.empty()) {
    // The model outlives the coordinator: export works after a restart.
    Checkpoint file;
    file.header.set_job_id(job_id);
    file.header.set_step(std::max<int64_t>(1, spec.training().epochs()));
    file.header.set_cause(CheckpointCause::trained_model);
    file.header.set_reason(CheckpointReason(CheckpointCause::trained_model, 0));
    *file.header.mutable_model() = trained->config;
    *file.header.mutable_data_units() = trained->units;
    for (const auto& [name, t] : trained->parameters) file.tensors["model/" + name] = t;
    absl::StatusOr<CheckpointInfo> written =
        WriteCheckpoint(registry_->ModelDir(job_id), file, 1);
    if (!written.ok()) LogError(job_id, "trained model not written", written.status());
  }
  registry_
      ->Update(job_id,
               [&](JobRegistry::Locked& r) {
                 r.record().trained = std::move(trained);
                 r.record().checkpoint.reset();
                 return absl::OkStatus();
               })
      .IgnoreError();  // forgotten meanwhile
}

JobRunner::AttemptEnd JobRunner::Attempt(const std::string& job_id, const JobSpec& spec,
                                         const WindowDataset* data,
                                         std::shared_ptr<const Checkpoint> resume,
                                         bool failover) {
  AttemptEnd end;
  // Polled while waiting for workers (a cancel ends the wait at once, not
  // after worker_wait) and by the trainer at every step boundary.
  auto cancelled = [this, job_id] { return registry_->Cancelled(job_id); };
  std::string fallback_reason;
  absl::StatusOr<std::vector<WorkerEntry>> entries =
      AcquireWorkers(job_id, spec, failover, cancelled, &fallback_reason);
  if (!entries.ok()) {
    end.status = entries.status();
    return end;
  }
  const HptSpec& hpt = spec.hpt();
  const bool devices = hpt.mode() == TrainingMode::hpt && hpt.placement() != Placement::gpu &&
                       fallback_reason.empty();
  Workers workers = Connect(job_id, std::move(*entries), devices, failover);
  auto release = [&] {
    registry_
        ->Update(job_id,
                 [](JobRegistry::Locked& r) {
                   r.record().clients.clear();
                   return absl::OkStatus();
                 })
        .IgnoreError();  // forgotten meanwhile
    for (auto& client : workers.clients) client->Release(job_id).IgnoreError();
  };
  Trainer::Options trainer_options;
  trainer_options.head_worker = workers.head;
  trainer_options.reram_workers = workers.reram;
  trainer_options.systolic_workers = workers.systolic;
  trainer_options.gpu_devices = workers.gpu_devices;
  if (workers.gpu.size() > 1 && options_.rendezvous) {
    absl::StatusOr<RendezvousStore*> store = options_.rendezvous();
    if (!store.ok()) {
      release();
      end.status = store.status();
      return end;
    }
    trainer_options.rendezvous = *store;
  }
  trainer_options.resume = std::move(resume);
  trainer_options.fallback_reason = fallback_reason;
  trainer_options.devices_returned = [this, &end] {
    end.returned =
        !pool_->Live(DeviceKind::reram).empty() && !pool_->Live(DeviceKind::systolic).empty();
    return end.returned;
  };
  Wire(job_id, spec.training(), cancelled, &end.reached_step, &trainer_options);
  Trainer trainer(job_id, spec, data, workers.gpu, trainer_options);
  end.trained = true;
  end.status = trainer.Run();
  if (end.status.ok()) KeepTrainedModel(job_id, spec, trainer.trained_model());
  release();
  return end;
}

}  // namespace hpt
