#include "coordinator/jobs/job_manager.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/device_kind.h"
#include "common/status_macros.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/spec/run_length.h"
#include "coordinator/training/job_data.h"

namespace hpt {

JobManager::JobManager(Options options, Parts parts)
    : options_(std::move(options)),
      registry_(parts.registry),
      runner_(parts.runner),
      scheduler_(parts.scheduler),
      pool_(parts.pool) {
  if (store() != nullptr) Recover();
}

JobManager::~JobManager() {
  registry_->SetStopping();
  registry_->UpdateAll([](JobRegistry::Locked& r) {
    r.record().cancel_requested = true;
    r.AbortClients(absl::CancelledError("the coordinator is stopping"));
  });
  scheduler_->Stop();
}

void JobManager::Recover() {
  absl::StatusOr<std::vector<Job>> stored = store()->LoadAll();
  if (!stored.ok()) {
    std::fprintf(stderr, "hpt_coordinator: %s\n", std::string(stored.status().message()).c_str());
    return;
  }
  const size_t count = stored->size();
  int queued = 0;
  for (Job& job : *stored) {
    const std::string id = job.job_id();
    const bool unfinished = !IsTerminal(job.state());
    // Finished jobs come back as they were; unfinished ones are written
    // again once requeued or failed.
    registry_->Add(std::move(job), /*request_id=*/"", /*persist=*/false);
    if (!unfinished) continue;
    registry_
        ->Update(id,
                 [&](JobRegistry::Locked& r) {
                   Requeue(r);
                   queued += r.job().state() == QUEUED;
                   return absl::OkStatus();
                 })
        .IgnoreError();  // just added
  }
  std::fprintf(stderr, "hpt_coordinator: %zu job(s) from %s, %d queued again\n", count,
               store()->path().c_str(), queued);
  registry_->Recount();
}

void JobManager::Requeue(JobRegistry::Locked& r) {
  // Its data set was in memory: load it again, then queue the job. (A job
  // that was LOADING simply loads again.)
  Job& job = r.job();
  const std::string id = job.job_id();
  const bool was_running = job.state() == RUNNING;
  DataSummary summary;
  absl::StatusOr<WindowDataset> data =
      LoadData(id, job.spec().data(), &summary, /*cancellable=*/false);
  if (!data.ok()) {
    job.set_state(FAILED);
    job.set_error(absl::StrCat("after a coordinator restart its data did not load: ",
                               data.status().message()));
    job.set_end_time_unix_ms(absl::ToUnixMillis(absl::Now()));
    r.Persist(/*force=*/true);
    return;
  }
  r.record().data = std::make_unique<WindowDataset>(std::move(*data));
  job.set_state(QUEUED);
  job.clear_workers();
  if (was_running) {
    // Its newest checkpoint file, if any (the runner reads it).
    std::vector<CheckpointInfo> kept;
    if (!state_dir().empty()) kept = ListCheckpoints(CheckpointDir(state_dir(), id));
    const int64_t from = kept.empty() ? 0 : kept.back().step();
    r.AddRecovery(kept.empty() ? "the coordinator restarted; no checkpoint, so from the start"
                               : "the coordinator restarted",
                  from);
    if (kept.empty()) {
      job.clear_progress();
      job.clear_epoch_losses();
    }
  }
  scheduler_->Enqueue(id);
  r.Persist(/*force=*/true);
}

std::string JobManager::CapacityNote(const JobSpec& spec) const {
  const int64_t want = spec.placement().gpu_workers();
  const int64_t have = int64_t(pool_->Live(DeviceKind::gpu).size());
  if (have >= want) return "";
  return absl::StrCat("placement.gpu_workers: the job asks for ", want, " GPU workers and ", have,
                      have == 1 ? " is" : " are", " registered now: it waits up to ",
                      absl::FormatDuration(runner_->options().worker_wait), " for ", want - have,
                      " more, then fails (start them, e.g. HPT_GPU_WORKERS=", want,
                      " ./hpt up, or submit with --gpu_workers=", std::max<int64_t>(have, 1), ")");
}

absl::StatusOr<Job> JobManager::Submit(const SubmitJobRequest& request,
                                       const std::string& owner) {
  if (std::optional<Job> existing = registry_->JobOfRequest(request.request_id())) {
    return *existing;
  }
  JobSpec spec = request.spec();
  if (!request.spec_text().empty()) {
    if (request.has_spec()) {
      return absl::InvalidArgumentError("SubmitJobRequest: give spec or spec_text, not both");
    }
    ASSIGN_OR_RETURN(spec, ParseJobSpecText(request.spec_text()));
  }
  const HptSpec given = spec.hpt();
  ASSIGN_OR_RETURN(spec, NormalizeJobSpec(std::move(spec)));
  if (std::string note = IgnoredLoraPhaseNote(given, spec.hpt()); !note.empty()) {
    spec.add_notes(std::move(note));
  }
  // Paths outside the data roots, FIFOs, devices and missing files are
  // refused before the job exists.
  RETURN_IF_ERROR(CheckJobDataPaths(spec.data(), options_.data_limits));
  if (std::string shortfall = CapacityNote(spec); !shortfall.empty()) spec.add_notes(shortfall);

  int64_t number = 0;
  if (store() != nullptr) {
    ASSIGN_OR_RETURN(number, store()->NextJobNumber());
  } else {
    number = registry_->NextJobNumber();
  }
  const std::string id = absl::StrFormat("job-%06d", number);
  Job job;
  job.set_job_id(id);
  job.set_name(spec.name());
  job.set_owner(owner);
  *job.mutable_spec() = spec;
  job.set_state(LOADING);
  job.mutable_hpt()->set_switch_step(-1);  // no switch yet, whatever becomes of the job
  job.set_create_time_unix_ms(absl::ToUnixMillis(absl::Now()));
  registry_->Add(std::move(job), request.request_id(), /*persist=*/true);
  if (CoordinatorMetrics* metrics = registry_->options().metrics; metrics != nullptr) {
    metrics->jobs_submitted.Add({}).Increment();
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
    limits.cancelled = [this, job_id] { return registry_->Cancelled(job_id); };
  }
  return BuildJobData(spec, summary, limits);
}

absl::StatusOr<Job> JobManager::FinishLoading(const std::string& job_id,
                                              absl::StatusOr<WindowDataset> data,
                                              const DataSummary& summary, const char* what) {
  Job out;
  absl::Status failed;
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    absl::Status status = data.status();
    ModelConfig model;
    if (status.ok()) {
      // The data loaded; the model it implies may still be refused.
      const JobSpec& spec = r.job().spec();
      absl::StatusOr<ModelConfig> resolved =
          ResolveModelConfig(spec.model(), data->input_features(), data->output_features());
      status = resolved.status();
      if (resolved.ok()) model = *std::move(resolved);
      what = "its model was refused";
    }
    if (r.record().cancel_requested) {
      // Cancel already ended it.
      return absl::CancelledError(absl::StrCat("job '", job_id, "' was cancelled while loading"));
    }
    if (!status.ok()) {
      r.SetState(FAILED, absl::StrCat(what, ": ", status.message()));
      return status;
    }
    // Said now, not after the run: a run too short for a check never switches.
    // (A resume loads again: the note is kept once.)
    const std::string note = NoCheckNote(r.job().spec(), int64_t(data->train_starts().size()));
    const auto& notes = r.job().spec().notes();
    if (!note.empty() && std::find(notes.begin(), notes.end(), note) == notes.end()) {
      r.job().mutable_spec()->add_notes(note);
    }
    r.record().data = std::make_unique<WindowDataset>(std::move(*data));
    *r.job().mutable_data() = summary;
    *r.job().mutable_model() = std::move(model);
    scheduler_->Enqueue(job_id);
    r.SetState(QUEUED, "");
    out = r.job();
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Job> JobManager::Get(const std::string& job_id) const {
  return registry_->Get(job_id);
}

std::vector<Job> JobManager::List() const { return registry_->List(); }

absl::StatusOr<Job> JobManager::Cancel(const std::string& job_id) {
  Job out;
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    const JobState state = r.job().state();
    if (!IsTerminal(state)) {  // idempotent
      r.record().cancel_requested = true;
      // Calls in flight end now, not at the step's end.
      r.AbortClients(absl::CancelledError(kCancelledByRequest));
      if (state == QUEUED) {
        scheduler_->Remove(job_id);
        r.SetState(CANCELLED, "cancelled before it started");
      } else if (state == LOADING) {
        // Its loader stops at its next check and leaves the job as it is.
        r.SetState(CANCELLED, "cancelled while its data loaded");
      }
      // A running job stops at its next step boundary (the trainer polls).
    }
    out = r.job();
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<DeleteJobResponse> JobManager::Delete(const std::string& job_id) {
  DeleteJobResponse response;
  response.set_job_id(job_id);
  if (!state_dir().empty()) {
    response.set_checkpoints(int64_t(ListCheckpoints(CheckpointDir(state_dir(), job_id)).size()));
  }
  RETURN_IF_ERROR(registry_->Forget(job_id, [&](const JobRegistry::Record& record) {
    const JobState state = record.job.state();
    if (!IsTerminal(state)) {
      return absl::FailedPreconditionError(
          absl::StrCat("job '", job_id, "' is ", JobState_Name(state),
                       "; only a finished job can be deleted (hptctl cancel it first)"));
    }
    response.set_model(state == SUCCEEDED);
    return absl::OkStatus();
  }));
  return response;
}

absl::StatusOr<int64_t> JobManager::Watch(const std::string& job_id, Watcher watcher) {
  return registry_->Watch(job_id, std::move(watcher));
}

void JobManager::Unwatch(int64_t token) { registry_->Unwatch(token); }

absl::StatusOr<std::vector<CheckpointInfo>> JobManager::Checkpoints(
    const std::string& job_id) const {
  std::shared_ptr<const Checkpoint> in_memory;
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    in_memory = r.record().checkpoint;
    return absl::OkStatus();
  }));
  if (!state_dir().empty()) return ListCheckpoints(CheckpointDir(state_dir(), job_id));
  std::vector<CheckpointInfo> out;
  if (in_memory != nullptr) out.push_back(InfoOf(in_memory->header, 0));
  return out;
}

absl::StatusOr<Job> JobManager::Resume(const std::string& job_id, int64_t step) {
  if (step > 0 && state_dir().empty()) {
    return absl::FailedPreconditionError(
        "the coordinator keeps no checkpoint files (start it with --state_dir); resume "
        "without a step takes the newest checkpoint in memory");
  }
  std::shared_ptr<const Checkpoint> from;
  if (step > 0) {
    ASSIGN_OR_RETURN(Checkpoint read, ReadCheckpoint(CheckpointDir(state_dir(), job_id), step));
    from = std::make_shared<const Checkpoint>(std::move(read));
  } else {
    from = runner_->LatestCheckpoint(job_id);
  }
  JobSpec spec;
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    Job& job = r.job();
    const JobState state = job.state();
    if (state != FAILED && state != CANCELLED) {
      return absl::FailedPreconditionError(
          absl::StrCat("job '", job_id, "' is ", JobState_Name(state),
                       "; only a failed or cancelled job can be resumed"));
    }
    spec = job.spec();
    r.record().checkpoint = from;
    r.record().cancel_requested = false;
    r.AddRecovery(from != nullptr ? "resumed by request"
                                  : "resumed by request; no checkpoint, so from the start",
                  from != nullptr ? from->header.step() : 0);
    if (from == nullptr) {
      job.clear_progress();
      job.clear_epoch_losses();
    }
    job.clear_error();
    job.set_end_time_unix_ms(0);
    job.clear_workers();
    // The data set was dropped when the job ended: it loads again.
    r.SetState(LOADING, "");
    return absl::OkStatus();
  }));
  DataSummary summary;
  return FinishLoading(job_id, LoadData(job_id, spec.data(), &summary, /*cancellable=*/true),
                       summary, "on resume its data did not load");
}

}  // namespace hpt
