#include "coordinator/jobs/job_queries.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/device_kind.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/training/baseline_probe_call.h"
#include "coordinator/training/job_data.h"
#include "cost/record_costing.h"
#include "data/data_units.h"
#include "models/predict.h"

namespace hpt {

absl::StatusOr<std::shared_ptr<const WorkRecord>> JobQueries::WorkRecordOf(
    const std::string& job_id) const {
  std::shared_ptr<const WorkRecord> held;
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    held = r.record().work_record;
    return absl::OkStatus();
  }));
  if (held != nullptr) return held;
  JobStore* store = registry_->options().store;
  if (store == nullptr) {
    return absl::NotFoundError(absl::StrCat(job_id, " has no work record yet (no step ran)"));
  }
  ASSIGN_OR_RETURN(WorkRecord stored, store->GetWorkRecord(job_id));
  auto shared = std::make_shared<const WorkRecord>(std::move(stored));
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    JobRegistry::Record& record = r.record();
    if (record.work_record == nullptr) record.work_record = record.stored_record = shared;
    held = record.work_record;
    return absl::OkStatus();
  }));
  return held;
}

absl::StatusOr<JobHistory> JobQueries::HistoryOf(const std::string& job_id, int max_points) const {
  std::shared_ptr<StepHistory> held;
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    held = r.record().history;
    return absl::OkStatus();
  }));
  if (held != nullptr) return held->View(max_points);
  std::shared_ptr<StepHistory> stored = std::make_shared<StepHistory>();
  if (JobStore* store = registry_->options().store; store != nullptr) {
    absl::StatusOr<LossHistory> proto = store->GetHistory(job_id);
    if (!proto.ok() && !absl::IsNotFound(proto.status())) return proto.status();
    if (proto.ok()) stored = StepHistory::FromProto(*proto, proto->step_losses_size());
  }
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    if (r.record().history == nullptr && stored->steps() > 0) r.record().history = stored;
    return absl::OkStatus();
  }));
  return stored->View(max_points);
}

absl::StatusOr<std::shared_ptr<const TrainedModel>> JobQueries::TrainedModelOf(
    const std::string& job_id) const {
  std::shared_ptr<const TrainedModel> held;
  JobState state = JOB_STATE_UNSPECIFIED;
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    held = r.record().trained;
    state = r.job().state();
    return absl::OkStatus();
  }));
  if (held == nullptr && state == SUCCEEDED && !registry_->options().state_dir.empty()) {
    // Trained before a restart: its model is on disk.
    absl::StatusOr<Checkpoint> file = ReadCheckpoint(registry_->ModelDir(job_id));
    if (file.ok()) {
      auto trained = std::make_shared<TrainedModel>();
      trained->config = file->header.model();
      trained->units = file->header.data_units();
      trained->parameters = TensorsUnder(*file, "model/");
      RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
        if (r.record().trained == nullptr) r.record().trained = trained;
        held = r.record().trained;
        return absl::OkStatus();
      }));
    }
  }
  if (held == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("job '", job_id, "' is ", JobState_Name(state),
                     "; only a succeeded job has a model to export"));
  }
  return held;
}

absl::StatusOr<WhatIfResponse> JobQueries::WhatIf(const WhatIfRequest& request) const {
  ASSIGN_OR_RETURN(CostSettings changes,
                   ParseCostSettings({request.settings().begin(), request.settings().end()}));
  ASSIGN_OR_RETURN(Job job, registry_->Get(request.job_id()));
  ASSIGN_OR_RETURN(std::shared_ptr<const WorkRecord> record, WorkRecordOf(request.job_id()));
  ASSIGN_OR_RETURN(JobCosts costs, CostOfRecord(*record, changes));
  WhatIfResponse response;
  ApplyCosts(costs, &job);
  *response.mutable_job() = std::move(job);
  for (const std::string& s : request.settings()) response.add_settings(s);
  for (const std::string& n : costs.numerics_notes) response.add_numerics_notes(n);
  return response;
}

absl::StatusOr<Job> JobQueries::ProbeBaselines(const std::string& job_id, int64_t steps) const {
  if (steps < 0 || steps > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("ProbeJobBaselinesRequest.steps must be in 0..1000 (0: 10), got ", steps));
  }
  ASSIGN_OR_RETURN(Job job, registry_->Get(job_id));
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
  std::unique_ptr<WorkerClient> gpu = client_factory_(gpus[0].address, DeviceKind::gpu);
  const std::vector<MeasuredBaseline> probes = ProbeJobBaselines(
      *gpu, model->config, job.spec().training().batch_size(), SampleTokens(job.data()),
      steps == 0 ? 10 : steps, job.spec().training().seed());
  auto probed = std::make_shared<WorkRecord>(*record);
  probed->clear_probes();
  for (const MeasuredBaseline& m : probes) *probed->add_probes() = m;
  ASSIGN_OR_RETURN(JobCosts costs, CostOfRecord(*probed, {}));
  Job out;
  RETURN_IF_ERROR(registry_->Update(job_id, [&](JobRegistry::Locked& r) {
    r.record().work_record = probed;
    ApplyCosts(costs, &r.job());
    r.Persist(/*force=*/true);
    r.Notify();
    out = r.job();
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<PredictResponse> JobQueries::Predict(const PredictRequest& request) const {
  ASSIGN_OR_RETURN(std::shared_ptr<const TrainedModel> model, TrainedModelOf(request.job_id()));
  ASSIGN_OR_RETURN(HostTensor input, FromProto(request.input(), "PredictRequest.input"));
  const DataUnits& units = model->units;
  // In the data's units unless asked otherwise (and the tokens are the
  // stations, so each has its statistics).
  const bool raw = !request.normalised() && units.per_token() && units.mean_size() > 0;
  if (raw) {
    if (absl::Status s = ToModelUnits(units, &input); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("PredictRequest.input (in the data's units): ", s.message(),
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

}  // namespace hpt
