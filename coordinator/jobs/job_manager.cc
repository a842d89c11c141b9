#include "coordinator/jobs/job_manager.h"

#include "cost/record_costing.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/training/baseline_probe_call.h"
#include "coordinator/training/job_data.h"
#include "data/data_units.h"
#include "models/predict.h"

namespace hpt {
namespace {

JobRegistry::Options RegistryOptions(const JobManager::Options& o) {
  JobRegistry::Options r;
  r.metrics = o.metrics;
  r.store = o.store;
  r.state_dir = o.state_dir;
  r.max_retained_jobs = o.max_retained_jobs;
  return r;
}

JobRunner::Options RunnerOptions(const JobManager::Options& o) {
  JobRunner::Options r;
  r.client_factory = o.client_factory;
  r.rendezvous = o.rendezvous;
  r.worker_wait = o.worker_wait;
  r.state_dir = o.state_dir;
  r.max_failovers = o.max_failovers;
  return r;
}

}  // namespace

JobManager::JobManager(Options options, WorkerPool* pool)
    : options_(std::move(options)),
      pool_(pool),
      registry_(RegistryOptions(options_)),
      runner_(RunnerOptions(options_), &registry_, pool),
      scheduler_(options_.max_running_jobs,
                 [this](const std::string& job_id) { runner_.Run(job_id); }) {
  if (options_.store != nullptr) Recover();
}

JobManager::~JobManager() {
  {
    absl::MutexLock lock(&registry_.mu());
    registry_.SetStopping();
    for (auto& [id, record] : registry_.records()) {
      record->cancel_requested = true;
      registry_.AbortClients(*record, absl::CancelledError("the coordinator is stopping"));
    }
  }
  scheduler_.Stop();
}

void JobManager::Recover() {
  absl::StatusOr<std::vector<Job>> stored = options_.store->LoadAll();
  if (!stored.ok()) {
    std::fprintf(stderr, "hpt_coordinator: %s\n", std::string(stored.status().message()).c_str());
    return;
  }
  absl::MutexLock lock(&registry_.mu());
  int queued = 0;
  for (Job& job : *stored) {
    const std::string id = job.job_id();
    const bool unfinished = !IsTerminal(job.state());
    // Finished jobs come back as they were; unfinished ones are written
    // again once requeued or failed.
    JobRegistry::Record& record = registry_.Add(std::move(job), /*persist=*/false);
    if (!unfinished) continue;
    Requeue(record);
    queued += record.job.state() == QUEUED;
  }
  std::fprintf(stderr, "hpt_coordinator: %zu job(s) from %s, %d queued again\n",
               registry_.records().size(), options_.store->path().c_str(), queued);
  registry_.UpdateCounts();
}

void JobManager::Requeue(JobRegistry::Record& record) {
  // Its data set was in memory: load it again, then queue the job. (A job
  // that was LOADING simply loads again.)
  const std::string id = record.job.job_id();
  const bool was_running = record.job.state() == RUNNING;
  DataSummary summary;
  absl::StatusOr<WindowDataset> data =
      LoadData(id, record.job.spec().data(), &summary, /*cancellable=*/false);
  if (!data.ok()) {
    record.job.set_state(FAILED);
    record.job.set_error(absl::StrCat("after a coordinator restart its data did not load: ",
                                      data.status().message()));
    record.job.set_end_time_unix_ms(absl::ToUnixMillis(absl::Now()));
    registry_.Persist(record, /*force=*/true);
    return;
  }
  record.data = std::make_unique<WindowDataset>(std::move(*data));
  record.job.set_state(QUEUED);
  record.job.clear_workers();
  if (was_running) {
    // Its newest checkpoint file, if any (the runner reads it).
    std::vector<CheckpointInfo> kept;
    if (!options_.state_dir.empty()) {
      kept = ListCheckpoints(CheckpointDir(options_.state_dir, id));
    }
    const int64_t from = kept.empty() ? 0 : kept.back().step();
    registry_.AddRecovery(record,
                          kept.empty() ? "the coordinator restarted; no checkpoint, so from "
                                         "the start"
                                       : "the coordinator restarted",
                          from);
    if (kept.empty()) {
      record.job.clear_progress();
      record.job.clear_epoch_losses();
    }
  }
  scheduler_.Enqueue(id);
  registry_.Persist(record, /*force=*/true);
}

std::string JobManager::CapacityNote(const JobSpec& spec) const {
  const int64_t want = spec.placement().gpu_workers();
  const int64_t have = int64_t(pool_->Live(DeviceKind::gpu).size());
  if (have >= want) return "";
  return absl::StrCat(
      "placement.gpu_workers: the job asks for ", want, " GPU workers and ", have,
      have == 1 ? " is" : " are", " registered now: it waits up to ",
      absl::FormatDuration(options_.worker_wait), " for ", want - have,
      " more, then fails (start them, e.g. HPT_GPU_WORKERS=", want,
      " ./hpt up, or submit with --gpu_workers=", std::max<int64_t>(have, 1), ")");
}

absl::StatusOr<Job> JobManager::Submit(const SubmitJobRequest& request,
                                       const std::string& owner) {
  if (!request.request_id().empty()) {
    absl::MutexLock lock(&registry_.mu());
    const std::string existing = registry_.JobOfRequest(request.request_id());
    if (!existing.empty()) {
      ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(existing));
      return record->job;
    }
  }
  JobSpec spec = request.spec();
  if (!request.spec_text().empty()) {
    if (request.has_spec()) {
      return absl::InvalidArgumentError("SubmitJobRequest: give spec or spec_text, not both");
    }
    ASSIGN_OR_RETURN(spec, ParseJobSpecText(request.spec_text()));
  }
  ASSIGN_OR_RETURN(spec, NormalizeJobSpec(std::move(spec)));
  // Paths outside the data roots, FIFOs, devices and missing files are
  // refused before the job exists.
  RETURN_IF_ERROR(CheckJobDataPaths(spec.data(), options_.data_limits));
  if (std::string shortfall = CapacityNote(spec); !shortfall.empty()) spec.add_notes(shortfall);

  int64_t number = 0;
  if (options_.store != nullptr) {
    ASSIGN_OR_RETURN(number, options_.store->NextJobNumber());
  }
  std::string id;
  {
    absl::MutexLock lock(&registry_.mu());
    if (options_.store == nullptr) number = registry_.NextJobNumber();
    id = absl::StrFormat("job-%06d", number);
    Job job;
    job.set_job_id(id);
    job.set_name(spec.name());
    job.set_owner(owner);
    *job.mutable_spec() = spec;
    job.set_state(LOADING);
    job.set_create_time_unix_ms(absl::ToUnixMillis(absl::Now()));
    registry_.Add(std::move(job));
    registry_.RememberRequest(request.request_id(), id);
    if (options_.metrics != nullptr) {
      options_.metrics->jobs_submitted.Add({}).Increment();
    }
    registry_.UpdateCounts();
    registry_.ForgetOldJobs();
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
      absl::MutexLock lock(&registry_.mu());
      return registry_.Cancelled(job_id);
    };
  }
  return BuildJobData(spec, summary, limits);
}

absl::StatusOr<Job> JobManager::FinishLoading(const std::string& job_id,
                                              absl::StatusOr<WindowDataset> data,
                                              const DataSummary& summary, const char* what) {
  absl::MutexLock lock(&registry_.mu());
  ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
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
    registry_.SetState(*record, FAILED, absl::StrCat(what, ": ", status.message()));
    return status;
  }
  record->data = std::make_unique<WindowDataset>(std::move(*data));
  *record->job.mutable_data() = summary;
  scheduler_.Enqueue(job_id);
  registry_.SetState(*record, QUEUED, "");
  return record->job;
}

absl::StatusOr<Job> JobManager::Get(const std::string& job_id) const {
  absl::MutexLock lock(&registry_.mu());
  ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
  return record->job;
}

absl::StatusOr<std::shared_ptr<const WorkRecord>> JobManager::WorkRecordOf(
    const std::string& job_id) const {
  {
    absl::MutexLock lock(&registry_.mu());
    ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
    if (record->work_record != nullptr) return record->work_record;
  }
  if (options_.store == nullptr) {
    return absl::NotFoundError(absl::StrCat(job_id, " has no work record yet (no step ran)"));
  }
  ASSIGN_OR_RETURN(WorkRecord stored, options_.store->GetWorkRecord(job_id));
  auto shared = std::make_shared<const WorkRecord>(std::move(stored));
  absl::MutexLock lock(&registry_.mu());
  ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
  if (record->work_record == nullptr) record->work_record = record->stored_record = shared;
  return record->work_record;
}

absl::StatusOr<WhatIfResponse> JobManager::WhatIf(const WhatIfRequest& request) const {
  ASSIGN_OR_RETURN(CostSettings changes,
                   ParseCostSettings({request.settings().begin(), request.settings().end()}));
  ASSIGN_OR_RETURN(Job job, Get(request.job_id()));
  ASSIGN_OR_RETURN(std::shared_ptr<const WorkRecord> record, WorkRecordOf(request.job_id()));
  ASSIGN_OR_RETURN(JobCosts costs, CostOfRecord(*record, changes));
  WhatIfResponse response;
  ApplyCosts(costs, &job);
  *response.mutable_job() = std::move(job);
  for (const std::string& s : request.settings()) response.add_settings(s);
  for (const std::string& n : costs.numerics_notes) response.add_numerics_notes(n);
  return response;
}

absl::StatusOr<Job> JobManager::ProbeBaselines(const std::string& job_id, int64_t steps) {
  if (steps < 0 || steps > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("ProbeJobBaselinesRequest.steps must be in 0..1000 (0: 10), got ", steps));
  }
  ASSIGN_OR_RETURN(Job job, Get(job_id));
  if (job.state() != SUCCEEDED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job '", job_id, "' is ", JobState_Name(job.state()),
        "; a probe times a succeeded job's step (hpt.probe_steps probes at a job's end)"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const TrainedModel> model, TrainedModelOf(job_id));
  ASSIGN_OR_RETURN(std::shared_ptr<const WorkRecord> record, WorkRecordOf(job_id));
  const std::vector<WorkerEntry> gpus = pool_->Live(DeviceKind::gpu);
  if (gpus.empty()) {
    return absl::FailedPreconditionError(
        "no GPU worker is live to probe on: start one (./hpt up starts HPT_GPU_WORKERS of them)");
  }
  std::unique_ptr<WorkerClient> gpu = options_.client_factory(gpus[0].address, DeviceKind::gpu);
  const std::vector<MeasuredBaseline> probes =
      ProbeJobBaselines(*gpu, model->config, job.spec().training().batch_size(),
                        SampleTokens(job.data()), steps == 0 ? 10 : steps,
                        job.spec().training().seed());
  auto probed = std::make_shared<WorkRecord>(*record);
  probed->clear_probes();
  for (const MeasuredBaseline& m : probes) *probed->add_probes() = m;
  ASSIGN_OR_RETURN(JobCosts costs, CostOfRecord(*probed, {}));
  absl::MutexLock lock(&registry_.mu());
  ASSIGN_OR_RETURN(JobRegistry::Record * r, registry_.Find(job_id));
  r->work_record = probed;
  ApplyCosts(costs, &r->job);
  registry_.Persist(*r, /*force=*/true);
  registry_.Notify(r->job);
  return r->job;
}

std::vector<Job> JobManager::List() const {
  absl::MutexLock lock(&registry_.mu());
  return registry_.List();
}

absl::StatusOr<Job> JobManager::Cancel(const std::string& job_id) {
  absl::MutexLock lock(&registry_.mu());
  ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
  if (IsTerminal(record->job.state())) return record->job;  // idempotent
  record->cancel_requested = true;
  // Calls in flight end now, not at the step's end.
  registry_.AbortClients(*record, absl::CancelledError("cancelled by request"));
  if (record->job.state() == QUEUED) {
    scheduler_.Remove(job_id);
    registry_.SetState(*record, CANCELLED, "cancelled before it started");
  } else if (record->job.state() == LOADING) {
    // Its loader stops at its next check and leaves the job as it is.
    registry_.SetState(*record, CANCELLED, "cancelled while its data loaded");
  }
  // A running job stops at its next step boundary (the trainer polls).
  return record->job;
}

absl::StatusOr<DeleteJobResponse> JobManager::Delete(const std::string& job_id) {
  DeleteJobResponse response;
  response.set_job_id(job_id);
  if (!options_.state_dir.empty()) {
    response.set_checkpoints(
        int64_t(ListCheckpoints(CheckpointDir(options_.state_dir, job_id)).size()));
  }
  absl::MutexLock lock(&registry_.mu());
  ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
  if (!IsTerminal(record->job.state())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job '", job_id, "' is ", JobState_Name(record->job.state()),
        "; only a finished job can be deleted (hptctl cancel it first)"));
  }
  response.set_model(record->job.state() == SUCCEEDED);
  RETURN_IF_ERROR(registry_.Forget(job_id));
  registry_.UpdateCounts();
  return response;
}

absl::StatusOr<int64_t> JobManager::Watch(const std::string& job_id, Watcher watcher) {
  return registry_.Watch(job_id, std::move(watcher));
}

void JobManager::Unwatch(int64_t token) { registry_.Unwatch(token); }

absl::StatusOr<std::shared_ptr<const TrainedModel>> JobManager::TrainedModelOf(
    const std::string& job_id) const {
  absl::MutexLock lock(&registry_.mu());
  ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
  if (record->trained == nullptr && record->job.state() == SUCCEEDED &&
      !options_.state_dir.empty()) {
    // Trained before a restart: its model is on disk.
    absl::StatusOr<Checkpoint> file = ReadCheckpoint(registry_.ModelDir(job_id));
    if (file.ok()) {
      auto trained = std::make_shared<TrainedModel>();
      trained->config = file->header.model();
      trained->units = file->header.data_units();
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

absl::StatusOr<JobHistory> JobManager::HistoryOf(const std::string& job_id, int max_points) const {
  {
    absl::MutexLock lock(&registry_.mu());
    ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
    if (record->history != nullptr) return record->history->View(max_points);
  }
  std::shared_ptr<StepHistory> stored = std::make_shared<StepHistory>();
  if (options_.store != nullptr) {
    absl::StatusOr<LossHistory> proto = options_.store->GetHistory(job_id);
    if (!proto.ok() && !absl::IsNotFound(proto.status())) return proto.status();
    if (proto.ok()) stored = StepHistory::FromProto(*proto, proto->step_losses_size());
  }
  absl::MutexLock lock(&registry_.mu());
  ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
  if (record->history == nullptr && stored->steps() > 0) record->history = stored;
  return stored->View(max_points);
}

absl::StatusOr<PredictResponse> JobManager::Predict(const PredictRequest& request) const {
  ASSIGN_OR_RETURN(std::shared_ptr<const TrainedModel> model, TrainedModelOf(request.job_id()));
  ASSIGN_OR_RETURN(HostTensor input, FromProto(request.input(), "PredictRequest.input"));
  const DataUnits& units = model->units;
  // In the data's units unless asked otherwise (and the tokens are the
  // stations, so each has its statistics).
  const bool raw = !request.normalised() && units.per_token() && units.mean_size() > 0;
  if (raw) {
    if (absl::Status s = ToModelUnits(units, &input); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "PredictRequest.input (in the data's units): ", s.message(),
          " (set normalised for the model's own units)"));
    }
  }
  absl::StatusOr<HostTensor> output = hpt::Predict(model->config, model->parameters, input);
  if (!output.ok()) {
    return absl::Status(output.status().code(),
                        absl::StrCat("PredictRequest.input: ", output.status().message()));
  }
  if (raw) RETURN_IF_ERROR(ToDataUnits(units, &*output));
  PredictResponse response;
  ToProto(std::move(*output), "output", response.mutable_output());
  *response.mutable_model() = model->config;
  *response.mutable_data_units() = units;
  response.set_normalised(!raw);
  return response;
}

absl::StatusOr<std::vector<CheckpointInfo>> JobManager::Checkpoints(
    const std::string& job_id) const {
  std::shared_ptr<const Checkpoint> in_memory;
  {
    absl::MutexLock lock(&registry_.mu());
    ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
    in_memory = record->checkpoint;
  }
  if (!options_.state_dir.empty()) {
    return ListCheckpoints(CheckpointDir(options_.state_dir, job_id));
  }
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
    from = runner_.LatestCheckpoint(job_id);
  }
  JobSpec spec;
  {
    absl::MutexLock lock(&registry_.mu());
    ASSIGN_OR_RETURN(JobRegistry::Record * record, registry_.Find(job_id));
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
    registry_.AddRecovery(*record,
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
    registry_.SetState(*record, LOADING, "");
  }
  DataSummary summary;
  return FinishLoading(job_id, LoadData(job_id, spec.data(), &summary, /*cancellable=*/true),
                       summary, "on resume its data did not load");
}

}  // namespace hpt
