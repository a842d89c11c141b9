#include "coordinator/training/trainer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/dispatch/for_each_worker.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/spec/run_length.h"
#include "coordinator/training/baseline_probe_call.h"
#include "coordinator/training/checkpoint_codec.h"  // ToPhaseEvent
#include "coordinator/training/hybrid_plan.h"
#include "workers/rendezvous_store.h"

namespace hpt {

absl::Status CheckTrainingLoss(double loss, int64_t step, double learning_rate) {
  if (std::isfinite(loss)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "training loss became ", loss, " at step ", step,
      "; the model diverged: lower training.optimizer.learning_rate (now ",
      learning_rate, ") or check the data for extreme values"));
}

std::string SharedDeviceNote(const std::vector<std::string>& devices) {
  std::map<std::string, std::vector<int>> ranks;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].empty()) ranks[devices[i]].push_back(int(i));
  }
  std::vector<std::string> shared;
  for (const auto& [device, on] : ranks) {
    if (on.size() > 1) {
      shared.push_back(absl::StrCat("ranks ", absl::StrJoin(on, ", "), " share device ", device));
    }
  }
  if (shared.empty()) return "";
  return absl::StrCat(absl::StrJoin(shared, "; "),
                      ": a Gloo group on their tensors, since NCCL refuses two ranks on one "
                      "GPU (give each worker a GPU of its own for NCCL)");
}

Trainer::Trainer(std::string job_id, JobSpec spec, const WindowDataset* data,
                 std::vector<WorkerClient*> workers, Options options)
    : job_id_(std::move(job_id)),
      spec_(std::move(spec)),
      placement_(options.fallback_reason.empty() ? spec_.hpt().placement() : Placement::gpu),
      data_(data),
      workers_(std::move(workers)),
      options_(std::move(options)),
      ledger_(spec_.hpt()),
      gpu_(job_id_, workers_, options_.head_worker, spec_.placement().head_device(),
           spec_.training().launch(), &ledger_.sink()) {}

Trainer::~Trainer() = default;

double Trainer::LearningRate(const TrainingSpec& training, int epoch) {
  const double lr = training.optimizer().learning_rate();
  if (training.step_lr_step_size() <= 0) return lr;
  return lr * std::pow(training.step_lr_gamma(),
                       epoch / training.step_lr_step_size());
}

void Trainer::Report() {
  // Work outside steps (evaluation) counts too: the report is the record's.
  ledger_.Compare(spec_.hpt().project_epochs(), &state_.hpt);
  state_.cost = ledger_.total();
  state_.device_costs = ledger_.device_costs();
  state_.work_record = std::make_shared<const WorkRecord>(ledger_.record());
  if (options_.on_progress) options_.on_progress(state_);
}

LoadParametersHeader Trainer::GpuHeader(const std::string& job, uint64_t seed_offset) const {
  LoadParametersHeader header;
  header.set_job_id(job);
  *header.mutable_model() = model_;
  *header.mutable_optimizer() = spec_.training().optimizer();
  header.set_init_seed(spec_.training().seed() + seed_offset);
  header.set_num_tokens(static_cast<int32_t>(data_->num_tokens()));
  header.set_precision(spec_.training().precision());
  return header;
}

LoadParametersHeader Trainer::LoraHeader(const std::string& job, uint64_t seed_offset) const {
  LoadParametersHeader header = GpuHeader(job, seed_offset);
  *header.mutable_optimizer() = spec_.hpt().lora_optimizer();
  *header.mutable_lora() = spec_.hpt().lora();
  return header;
}

LoadParametersHeader Trainer::FullHeader(int64_t steps_done) const {
  LoadParametersHeader header = GpuHeader(job_id_, 0);
  header.set_optimizer_steps(cursor_.main_updates);
  const std::vector<int> layers =
      controller_ != nullptr ? controller_->SwitchedLayers() : std::vector<int>{};
  if (layers.empty()) return header;
  *header.mutable_lora() = spec_.hpt().lora();
  for (int l : layers) {
    header.mutable_lora()->add_layers(l);
    // A layer's adapter has taken one update a step since its switch.
    const int64_t since = steps_done - controller_->layer_switch_steps()[size_t(l)];
    (*header.mutable_optimizer_steps_by_prefix())[absl::StrCat("layers.", l, ".self_attn.lora_")] =
        std::max<int64_t>(0, since);
  }
  return header;
}

LoadParametersHeader Trainer::TrialHeader() const {
  LoadParametersHeader header = LoraHeader(gpu_.trial_job(), kTrialSeedOffset);
  header.mutable_lora()->set_reference_job(job_id_);
  return header;
}

absl::Status Trainer::LoadModel() {
  ASSIGN_OR_RETURN(model_, ResolveModelConfig(spec_.model(), data_->input_features(),
                                              data_->output_features()));
  LoadParametersHeader header = GpuHeader(job_id_, 0);
  if (options_.head_worker != nullptr) header.set_gpu_segment("encoder");
  // The training samples go with the model, once: runs send sample ids.
  std::vector<TensorChunk> samples;
  const int64_t sample_bytes = AddSamples(&header, &samples);
  // Every rank initialises from the same seed; JoinGroup then broadcasts
  // rank 0's parameters so replicas are identical whatever the platform.
  std::vector<LoadParametersResponse> loaded(workers_.size());
  RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(loaded[i], workers_[i]->LoadParameters(header, samples));
    return absl::OkStatus();
  }));
  if (sample_bytes > 0) {
    for (size_t i = 0; i < workers_.size(); ++i) {
      ledger_.Record(MakeFinishedTask(AddressOf(workers_[i]), DeviceKind::gpu, "load",
                                      loaded[i].cost(), sample_bytes));
    }
  }
  ledger_.set_trainable_bytes(loaded[0].num_trainable() * int64_t(sizeof(float)));
  RETURN_IF_ERROR(JoinGroups());
  if (options_.head_worker != nullptr) {
    // The head's initial weights are the GPU's seeded ones.
    ASSIGN_OR_RETURN(std::vector<TensorChunk> head,
                     workers_[0]->Snapshot(job_id_, {"reduction.0.weight", "reduction.0.bias",
                                                     "head.weight", "head.bias"}));
    RETURN_IF_ERROR(LoadHead(std::move(head), 0));
  }
  return absl::OkStatus();
}

absl::Status Trainer::JoinGroups() {
  if (workers_.size() < 2) return absl::OkStatus();
  if (options_.rendezvous == nullptr) {
    return absl::FailedPreconditionError(
        "data-parallel training needs the coordinator's rendezvous store");
  }
  const std::string prefix =
      absl::StrCat(job_id_, "/", absl::ToUnixNanos(absl::Now()), "/");
  const std::string shared = SharedDeviceNote(options_.gpu_devices);
  state_.hpt.set_group_note(shared);
  return ForEachWorker(workers_.size(), [&](size_t i) {
    JoinGroupRequest join;
    join.set_job_id(job_id_);
    join.set_rank(static_cast<int32_t>(i));
    join.set_world_size(static_cast<int32_t>(workers_.size()));
    join.set_store_host(options_.rendezvous->host());
    join.set_store_port(options_.rendezvous->port());
    join.set_store_prefix(prefix);
    join.set_timeout_s(options_.join_timeout_s);
    join.set_collective_timeout_s(options_.collective_timeout_s);
    if (!shared.empty()) join.set_backend("gloo");
    return workers_[i]->JoinGroup(join);
  });
}

absl::Status Trainer::LoadHead(std::vector<TensorChunk> head, int64_t optimizer_steps) {
  const DeviceKind::Name kind = spec_.placement().head_device();
  const bool trainable = kind != DeviceKind::reram;  // ReRAM weights stay frozen
  LoadParametersHeader header;
  header.set_job_id(job_id_);
  *header.mutable_optimizer() = spec_.training().optimizer();
  *header.mutable_segment() = HeadSegment(trainable);
  header.set_optimizer_steps(optimizer_steps);
  ASSIGN_OR_RETURN(LoadParametersResponse loaded,
                   options_.head_worker->LoadParameters(header, head));
  ledger_.Record(
      MakeFinishedTask(AddressOf(options_.head_worker), kind, "load", loaded.cost(), ChunkBytes(head)));
  return absl::OkStatus();
}

absl::Status Trainer::TrainStep(const std::vector<int64_t>& indices, int64_t step,
                                double learning_rate, double* loss) {
  if (hybrid_ == nullptr) CountDispatch(1, nullptr);  // on the GPU workers, task by task
  if (options_.head_worker == nullptr && hybrid_ == nullptr) {
    ASSIGN_OR_RETURN(*loss, gpu_.DataParallelStep(*data_, indices, step, learning_rate));
    return CheckTrainingLoss(*loss, step, learning_rate);
  }
  HostTensor x, y;
  data_->Gather(data_->train_starts(), indices, &x, &y);
  if (hybrid_ != nullptr) {
    ASSIGN_OR_RETURN(*loss, hybrid_->Forward(x, &y, step, true, ledger_.sink()));
    RETURN_IF_ERROR(CheckTrainingLoss(*loss, step, learning_rate));
    RETURN_IF_ERROR(hybrid_->Backward(step, ledger_.sink()));
    return hybrid_->Update(step, learning_rate, ledger_.sink());
  }
  ASSIGN_OR_RETURN(*loss, gpu_.HeadStep(x, y, step, learning_rate));
  return CheckTrainingLoss(*loss, step, learning_rate);
}

absl::Status Trainer::Prepare() {
  const TrainingSpec& training = spec_.training();
  const int64_t n_train = static_cast<int64_t>(data_->train_starts().size());
  const int64_t steps_per_epoch = StepsPerEpoch(spec_, n_train);
  cursor_.steps_per_epoch = steps_per_epoch;
  ledger_.set_steps_per_epoch(steps_per_epoch);
  ledger_.set_job(job_id_, spec_.model().preset());
  if (steps_per_epoch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the training split has ", n_train, " samples, fewer than ",
        workers_.size(), " workers need for one step"));
  }
  JobProgress& p = state_.progress;
  p.set_epochs(training.epochs());
  p.set_total_steps(steps_per_epoch * training.epochs());
  hpt_ = spec_.hpt().mode() == TrainingMode::hpt;
  state_.hpt.set_phase(TrainingPhase::full);
  state_.hpt.set_switch_step(-1);
  state_.hpt.set_check_window_steps(spec_.hpt().check_window_steps());
  state_.hpt.set_check_window_samples(spec_.hpt().check_window_samples());
  state_.hpt.set_batch_size(training.batch_size());
  state_.hpt.set_placement(hpt_ ? spec_.hpt().placement() : Placement::gpu);
  if (hpt_) {
    controller_ = std::make_unique<PhaseController>(
        PhaseControllerOptionsOf(spec_.hpt(), p.total_steps()));
  }
  return absl::OkStatus();
}

absl::Status Trainer::RunStep(const std::vector<int64_t>& indices, int64_t step,
                              double learning_rate, bool* switched) {
  step_start_ = options_.now();
  const bool lora_step = phase_ == TrainingPhase::lora;
  // The LoRA phase's optimizer keeps its own constant rate (paper_recipes.h).
  if (lora_step) learning_rate = spec_.hpt().lora_optimizer().learning_rate();
  state_.progress.set_learning_rate(learning_rate);
  double loss = 0;
  ledger_.set_chain(Chain::kMain);
  RETURN_IF_ERROR(TrainStep(indices, step, learning_rate, &loss));
  ++cursor_.main_updates;
  if (hpt_ && phase_ == TrainingPhase::full) {
    RETURN_IF_ERROR(ControlPhase(indices, step, learning_rate, loss, switched));
  }
  ledger_.set_chain(Chain::kNone);
  const double wall_s = absl::ToDoubleSeconds(options_.now() - step_start_);
  // The step's main tasks ran data-parallel unless they ran on devices.
  const bool data_parallel =
      workers_.size() > 1 && options_.head_worker == nullptr && hybrid_ == nullptr;
  CostPhase::Name where = hybrid_ != nullptr ? CostPhase::partial : CostPhase::full;
  if (lora_step) where = options_.fallback_reason.empty() ? CostPhase::lora : CostPhase::lora_gpu;
  ledger_.CloseStep(step, where, data_parallel ? int(workers_.size()) : 1, wall_s);
  FinishStep(step + 1, int64_t(indices.size()), loss);
  return absl::OkStatus();
}

void Trainer::FinishStep(int64_t steps_done, int64_t samples, double loss, bool report) {
  cursor_.samples += samples;
  cursor_.epoch_loss_sum += loss;
  state_.history->AddStep(steps_done - 1, loss);
  JobProgress& p = state_.progress;
  const absl::Time now = options_.now();
  const double elapsed = absl::ToDoubleSeconds(now - start_);
  p.set_step(steps_done);
  p.set_loss(loss);
  p.set_elapsed_s(elapsed);
  p.set_samples_per_s(elapsed > 0 ? cursor_.samples / elapsed : 0);
  const int64_t remaining = p.total_steps() - steps_done;
  // From the end of a run of steps (`report`), whose steps all end at once.
  if (pace_from_next_ && report) {
    pace_since_ = now;
    pace_steps_ = steps_done;
    pace_from_next_ = false;
  }
  const double paced = absl::ToDoubleSeconds(now - pace_since_);
  p.set_eta_s(steps_done > pace_steps_ && paced > 0
                  ? paced / double(steps_done - pace_steps_) * double(remaining)
                  : elapsed / double(steps_done) * double(remaining));
  if (report) Report();
}

absl::Status Trainer::BackToPlannedPlacement(int64_t step) {
  if (options_.fallback_reason.empty() || !options_.devices_returned ||
      !options_.devices_returned()) {
    return absl::OkStatus();
  }
  // The checkpoint of this step boundary: the caller resumes from it on the
  // planned placement, so no step is lost.
  RETURN_IF_ERROR(SaveCheckpoint(step, CheckpointCause::placement_back));
  return absl::AbortedError(absl::StrCat("the ", Placement::Name_Name(spec_.hpt().placement()),
                                         " placement's workers are back at step ", step,
                                         ": leaving the fallback (", options_.fallback_reason,
                                         ")"));
}

absl::StatusOr<int64_t> Trainer::Begin() {
  start_ = options_.now();
  RETURN_IF_ERROR(Prepare());
  int64_t step = 0;
  if (options_.resume != nullptr) {
    RETURN_IF_ERROR(Restore(*options_.resume));
    step = options_.resume->header.step();
    if (options_.switch_policy != nullptr && hpt_ && phase_ == TrainingPhase::full &&
        options_.switch_policy->AtResume(step) == SwitchPolicy::Decision::kSwitch) {
      RETURN_IF_ERROR(SwitchNow(step));
    }
  } else {
    RETURN_IF_ERROR(LoadModel());
    if (hpt_) RETURN_IF_ERROR(WeightDistances().status());  // W at the start
  }
  state_.hpt.set_fallback_reason(options_.fallback_reason);
  // The plan is known and the model is on the workers: said now, not after
  // the first run of steps (minutes on a CPU for thousands of tokens).
  state_.progress.set_epoch(step / cursor_.steps_per_epoch + 1);
  Report();
  return step;
}

absl::Status Trainer::TrainEpoch(int epoch, int64_t* step, CheckpointCause::Name* checkpoint_due) {
  const TrainingSpec& training = spec_.training();
  const int64_t n_train = static_cast<int64_t>(data_->train_starts().size());
  const int64_t batch = training.batch_size();
  const int64_t steps_per_epoch = cursor_.steps_per_epoch;
  const double lr = LearningRate(training, epoch);
  JobProgress& p = state_.progress;
  p.set_epoch(epoch + 1);
  p.set_learning_rate(lr);
  std::vector<int64_t> order(n_train);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(training.seed() * 1000003 + epoch);
  std::shuffle(order.begin(), order.end(), rng);
  const int64_t first_s = *step % steps_per_epoch;  // 0 but in a resumed epoch
  if (first_s == 0) cursor_.epoch_loss_sum = 0;
  std::vector<int64_t> sizes(steps_per_epoch);
  for (int64_t s = 0; s < steps_per_epoch; ++s) {
    sizes[s] = std::min<int64_t>(batch, n_train - s * batch);
  }
  for (int64_t s = first_s; s < steps_per_epoch;) {
    if (options_.cancelled()) {
      return absl::CancelledError(absl::StrCat("cancelled at step ", *step));
    }
    RETURN_IF_ERROR(BackToPlannedPlacement(*step));
    const int64_t n = StepsInRun(*step, s, sizes);
    std::vector<std::vector<int64_t>> batches;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t begin = (s + j) * batch;
      batches.emplace_back(order.begin() + begin, order.begin() + begin + sizes[s + j]);
    }
    bool switched = false;
    if (n > 1) {
      RETURN_IF_ERROR(RunSteps(batches, *step, lr, &switched));
    } else {
      RETURN_IF_ERROR(RunStep(batches[0], *step, lr, &switched));
    }
    *step += n;
    s += n;
    // A checkpoint at the epoch's last step waits for its evaluation, so
    // the epoch's loss and test metrics are in it. (A run ends at every
    // step a checkpoint or a switch can follow.)
    if (switched) {
      *checkpoint_due = CheckpointCause::phase_switch;
    } else if (options_.checkpoint_every > 0 && *step % options_.checkpoint_every == 0) {
      *checkpoint_due = CheckpointCause::periodic;
    }
    if (*checkpoint_due != kNoCheckpointDue && s < steps_per_epoch) {
      RETURN_IF_ERROR(SaveCheckpoint(*step, *checkpoint_due));
      *checkpoint_due = kNoCheckpointDue;
    }
  }
  return absl::OkStatus();
}

absl::Status Trainer::CloseEpoch(int epoch, int64_t step, CheckpointCause::Name* checkpoint_due) {
  const TrainingSpec& training = spec_.training();
  JobProgress& p = state_.progress;
  const double epoch_loss = cursor_.epoch_loss_sum / cursor_.steps_per_epoch;
  state_.epoch_losses.push_back(epoch_loss);
  p.set_epoch_loss(epoch_loss);
  if (epoch == 0) p.set_first_epoch_loss(epoch_loss);
  const bool evaluate = options_.evaluate_every_epoch || epoch + 1 == training.epochs() ||
                        training.select() == Selection::best_validation;
  bool tested = false;
  if (evaluate) {
    ASSIGN_OR_RETURN(tested, Evaluate(epoch + 1));
  }
  // An epoch not scored keeps 0 (none) in its point, not an earlier score.
  EpochPoint point;
  point.set_epoch(epoch + 1);
  point.set_last_step(step - 1);
  point.set_train_loss(epoch_loss);
  if (tested) point.set_test_loss(p.test_loss());
  if (evaluate) point.set_validation_loss(p.validation_loss());
  state_.history->AddEpoch(point);
  Report();
  if (*checkpoint_due != kNoCheckpointDue && epoch + 1 < training.epochs()) {
    RETURN_IF_ERROR(SaveCheckpoint(step, *checkpoint_due));
  }
  *checkpoint_due = kNoCheckpointDue;
  return absl::OkStatus();
}

absl::Status Trainer::Finish() {
  // A trial still open when the run ends is dropped: the model delivered is
  // the full one, so the job's phase says so.
  const bool trial_open = cursor_.trial_active;
  if (trial_open) {
    DropTrial();
    state_.hpt.set_phase(TrainingPhase::full);
  }
  RETURN_IF_ERROR(CollectTrainedModel());
  if (ApplySelection() || trial_open) Report();
  if (spec_.hpt().probe_steps() > 0) {
    // Training is done: the probe's scratch model cannot touch it.
    ledger_.SetProbes(ProbeJobBaselines(*workers_[0], model_, spec_.training().batch_size(),
                                        data_->num_tokens(), spec_.hpt().probe_steps(),
                                        spec_.training().seed()));
    Report();
  }
  return absl::OkStatus();
}

absl::Status Trainer::Run() {
  ASSIGN_OR_RETURN(int64_t step, Begin());
  // Why a checkpoint is owed at the end of the epoch's evaluation, if one is.
  CheckpointCause::Name checkpoint_due = kNoCheckpointDue;
  for (int epoch = int(step / cursor_.steps_per_epoch); epoch < spec_.training().epochs();
       ++epoch) {
    RETURN_IF_ERROR(TrainEpoch(epoch, &step, &checkpoint_due));
    RETURN_IF_ERROR(CloseEpoch(epoch, step, &checkpoint_due));
  }
  return Finish();
}

}  // namespace hpt
