// Trainer's checkpoints: making one from the workers' state, and resuming
// from one (the workers loaded again, the ReRAM workers re-programmed).
// The rest of Trainer is in trainer.cc.
#include "coordinator/training/trainer.h"

#include "absl/strings/match.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/dispatch/for_each_worker.h"
#include "coordinator/training/checkpoint_codec.h"
#include "coordinator/training/hybrid_plan.h"

namespace hpt {

absl::StatusOr<Checkpoint> Trainer::MakeCheckpoint(int64_t step, CheckpointCause::Name cause) {
  CheckpointIdentity identity;
  identity.job_id = job_id_;
  identity.step = step;
  identity.time_unix_ms = absl::ToUnixMillis(options_.now());
  identity.cause = cause;
  identity.reason = CheckpointReason(cause, options_.checkpoint_every);
  identity.model = model_;
  identity.elapsed_s = absl::ToDoubleSeconds(options_.now() - start_);
  Checkpoint c;
  c.header = EncodeCheckpointHeader(identity, state_, cursor_, controller_.get(), ledger_);
  auto take = [&](const std::string& prefix, std::map<std::string, HostTensor> tensors) {
    for (auto& [name, t] : tensors) c.tensors[prefix + name] = std::move(t);
  };
  if (selected_.epoch > 0) {
    SelectedEpoch& s = *c.header.mutable_selected();
    s.set_epoch(selected_.epoch);
    s.set_validation_loss(selected_.validation_loss);
    s.set_test_loss(selected_.test_loss);
    *s.mutable_test_metrics() = selected_.metrics;
    *s.mutable_predictions() = selected_.predictions;
    take("selected/", selected_.model.parameters);
  }
  if (hybrid_ != nullptr) {
    ASSIGN_OR_RETURN(auto params, ModelTensors(/*optimizer_state=*/true));
    take("model/", std::move(params));
    return c;
  }
  auto snapshot = [&](WorkerClient* worker, const std::string& job,
                      const std::string& prefix) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, worker->Snapshot(job, {}, true));
    ASSIGN_OR_RETURN(auto tensors, AssembleChunks(chunks));
    take(prefix, std::move(tensors));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(snapshot(workers_[0], job_id_, "model/"));
  if (options_.head_worker != nullptr) {
    RETURN_IF_ERROR(snapshot(options_.head_worker, job_id_, "head/"));
  }
  if (cursor_.trial_active) RETURN_IF_ERROR(snapshot(workers_[0], gpu_.trial_job(), "trial/"));
  return c;
}

absl::Status Trainer::SaveCheckpoint(int64_t step, CheckpointCause::Name cause) {
  if (!options_.on_checkpoint) return absl::OkStatus();
  ASSIGN_OR_RETURN(Checkpoint c, MakeCheckpoint(step, cause));
  options_.on_checkpoint(std::move(c));
  return absl::OkStatus();
}

absl::Status Trainer::Restore(const Checkpoint& checkpoint) {
  CheckpointIdentity identity;
  identity.job_id = job_id_;
  RETURN_IF_ERROR(DecodeCheckpointHeader(checkpoint.header, &identity, &state_, &cursor_,
                                         controller_.get(), &ledger_));
  model_ = identity.model;
  RETURN_IF_ERROR(RestoreSelection(checkpoint));
  start_ = options_.now() - absl::Seconds(identity.elapsed_s);
  pace_from_next_ = true;
  phase_ = cursor_.lora_phase ? TrainingPhase::lora : TrainingPhase::full;
  events_seen_ = 0;
  ledger_.set_chain(Chain::kRecovery);
  RETURN_IF_ERROR(Reload(checkpoint));
  ledger_.set_chain(Chain::kNone);
  ledger_.CloseRecovery(identity.step);
  ledger_.Compare(spec_.hpt().project_epochs(), &state_.hpt);
  return absl::OkStatus();
}

absl::Status Trainer::RestoreSelection(const Checkpoint& checkpoint) {
  selected_ = Selected();
  const SelectedEpoch& s = checkpoint.header.selected();
  if (s.epoch() == 0) return absl::OkStatus();
  TrainedModel model;
  model.parameters = TensorsUnder(checkpoint, "selected/");
  if (model.parameters.empty()) {
    return absl::DataLossError(absl::StrCat(
        "the checkpoint at step ", checkpoint.header.step(), " names epoch ", s.epoch(),
        " as the best-validating one but holds none of its weights; resume from an earlier "
        "checkpoint (hptctl checkpoints) or start the job again"));
  }
  model.config = model_;
  model.units = DataUnitsOf(*data_);
  selected_.epoch = s.epoch();
  selected_.validation_loss = s.validation_loss();
  selected_.test_loss = s.test_loss();
  selected_.metrics = s.test_metrics();
  selected_.predictions = s.predictions();
  selected_.model = std::move(model);
  return absl::OkStatus();
}

absl::Status Trainer::Reload(const Checkpoint& checkpoint) {
  const CheckpointHeader& h = checkpoint.header;
  const std::map<std::string, HostTensor> model = TensorsUnder(checkpoint, "model/");
  if (model.empty()) {
    return absl::DataLossError(absl::StrCat("the checkpoint at step ", h.step(),
                                            " holds no model parameters"));
  }
  // The full phase trains on the devices once a layer has switched under
  // layerwise, as the LoRA phase does.
  const bool partial = phase_ == TrainingPhase::full && controller_ != nullptr &&
                       !controller_->SwitchedLayers().empty();
  if ((phase_ == TrainingPhase::lora || partial) && placement_ != Placement::gpu) {
    std::map<std::string, int> ranks(h.hpt().lora_ranks().begin(), h.hpt().lora_ranks().end());
    // A checkpoint made on the GPU workers (a fallback) lacks the constant.
    std::map<std::string, HostTensor> params = model;
    // The GPU session's reference weights have no place on the devices;
    // before the switch the trainer keeps them for the later layers' ranks.
    std::map<std::string, HostTensor> reference = TakeSuffixed(kInitialSuffix, &params);
    if (partial) reference_weights_ = std::move(reference);
    AddTokenEncoding(data_->num_tokens(), model_.d_model(), &params);
    return StartHybrid(params, ranks, cursor_.main_updates, h.step());
  }
  const std::map<std::string, HostTensor> on_gpu = GpuModelTensors(model);
  LoadParametersHeader header =
      phase_ == TrainingPhase::lora ? LoraHeader(job_id_, kLoraSeedOffset) : FullHeader(h.step());
  header.set_optimizer_steps(cursor_.main_updates);
  if (options_.head_worker != nullptr) header.set_gpu_segment("encoder");
  std::vector<TensorChunk> chunks = SplitTensors(on_gpu);
  AddSamples(&header, &chunks);  // again: a worker that replaced a lost one has none
  RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) -> absl::Status {
    return workers_[i]->LoadParameters(header, chunks).status();
  }));
  RETURN_IF_ERROR(JoinGroups());
  if (options_.head_worker != nullptr) {
    RETURN_IF_ERROR(
        LoadHead(SplitTensors(TensorsUnder(checkpoint, "head/")), cursor_.main_updates));
  }
  if (cursor_.trial_active) {
    LoadParametersHeader trial = TrialHeader();
    trial.set_optimizer_steps(cursor_.trial_updates);
    RETURN_IF_ERROR(workers_[0]
                        ->LoadParameters(trial, SplitTensors(TensorsUnder(checkpoint, "trial/")))
                        .status());
  }
  return absl::OkStatus();
}

}  // namespace hpt
