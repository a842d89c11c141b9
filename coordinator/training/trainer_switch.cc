// Trainer's phase switch: the weight test's distance, the LoRA trial, the
// switch to the lower-parameter phase and where that phase runs, and the
// phase controller's step. The rest of Trainer is in trainer.cc.
#include "coordinator/training/trainer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/dispatch/for_each_worker.h"
#include "coordinator/training/checkpoint_codec.h"  // ToPhaseEvent
#include "coordinator/training/hybrid_plan.h"
#include "coordinator/training/model_export.h"

namespace hpt {

PhaseControllerOptions PhaseControllerOptionsOf(const HptSpec& h, int64_t total_steps) {
  PhaseControllerOptions o;
  o.check_window_steps = h.check_window_steps();
  o.loss_threshold = h.loss_threshold();
  o.weight_threshold = h.weight_threshold();
  o.alpha = h.alpha();
  o.trial_on_rising_loss = h.trial_on_rising_loss();
  // A normalised spec names its rule and test (coordinator/spec).
  o.rule = h.switch_rule();
  if (o.rule == SwitchRule::consecutive) o.checks_in_a_row = h.consecutive_checks();
  if (h.trend_windows() > 0) o.trend_windows = h.trend_windows();
  if (h.trend_gain() > 0) o.trend_gain = h.trend_gain();
  if (h.plateau_z() > 0) o.plateau_z = h.plateau_z();
  o.trial_test = h.trial_test();
  if (h.trial_margin() > 0) o.trial_margin = h.trial_margin();
  o.total_steps = total_steps;
  return o;
}

absl::StatusOr<Trainer::WindowDistances> Trainer::WeightDistances() {
  const bool every = controller_->options().rule == SwitchRule::layerwise;
  const int64_t tracked = spec_.hpt().weight_layer();
  std::vector<int64_t> layers = {tracked};
  if (every) {
    layers.clear();
    for (int64_t l = 0; l < model_.num_layers(); ++l) layers.push_back(l);
  }
  std::vector<std::string> names;
  for (int64_t l : layers) {
    const std::string prefix = absl::StrCat("layers.", l, ".self_attn.");
    names.push_back(prefix + "q_proj.weight");
    names.push_back(prefix + "v_proj.weight");
  }
  std::map<std::string, HostTensor> tensors;
  if (hybrid_ != nullptr) {  // the full phase on the devices
    ASSIGN_OR_RETURN(tensors, hybrid_->Parameters(/*optimizer_state=*/false, names));
  } else {
    ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, workers_[0]->Snapshot(job_id_, names));
    ASSIGN_OR_RETURN(tensors, AssembleChunks(chunks));
  }
  // [W_q | W_v] of each layer, one after another.
  std::vector<float> w;
  std::vector<size_t> ends;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = tensors.find(names[i]);
    if (it == tensors.end()) {
      return absl::InternalError(absl::StrCat("the workers did not send '", names[i], "'"));
    }
    w.insert(w.end(), it->second.data.begin(), it->second.data.end());
    if (i % 2 == 1) ends.push_back(w.size());
  }
  std::vector<float>& last = cursor_.last_weights;
  WindowDistances out;
  size_t begin = 0;
  for (size_t l = 0; l < ends.size(); ++l) {
    double sq = 0;
    if (last.size() == w.size()) {
      for (size_t i = begin; i < ends[l]; ++i) {
        const double d = double(w[i]) - last[i];
        sq += d * d;
      }
    }
    out.layers.push_back(std::sqrt(sq));
    begin = ends[l];
  }
  out.tracked = out.layers[every ? size_t(tracked) : 0];
  last = std::move(w);
  return out;
}

absl::Status Trainer::StartTrial() {
  WorkerClient* gpu = workers_[0];
  ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, gpu->Snapshot(job_id_, {}));
  ASSIGN_OR_RETURN(LoadParametersResponse loaded, gpu->LoadParameters(TrialHeader(), chunks));
  ledger_.Record(
      MakeFinishedTask(AddressOf(gpu), DeviceKind::gpu, "load", loaded.cost(), ChunkBytes(chunks)));
  cursor_.trial_active = true;
  cursor_.trial_updates = 0;
  return absl::OkStatus();
}

void Trainer::DropTrial() {
  workers_[0]->Release(gpu_.trial_job()).IgnoreError();
  cursor_.trial_active = false;
}

absl::Status Trainer::Switch() {
  WorkerClient* gpu = workers_[0];
  DropTrial();
  std::vector<TensorChunk> chunks;
  // Layers already on ReRAM (layerwise) keep their crossbars' read state.
  std::map<std::string, HostTensor> read_state;
  if (hybrid_ != nullptr) {  // the full phase ran on the devices
    ASSIGN_OR_RETURN(auto tensors, hybrid_->Parameters(/*optimizer_state=*/true));
    read_state = TakeSuffixed(kReramReadSuffix, &tensors);
    for (auto it = tensors.begin(); it != tensors.end();) {  // a fresh optimizer
      it = it->first.find('@') != std::string::npos ? tensors.erase(it) : std::next(it);
    }
    tensors = GpuModelTensors(std::move(tensors));
    tensors.merge(reference_weights_);  // what the auto ranks measure from
    chunks = SplitTensors(tensors);
  } else {
    ASSIGN_OR_RETURN(chunks, gpu->Snapshot(job_id_, {}));
  }
  const LoadParametersHeader header = LoraHeader(job_id_, kLoraSeedOffset);
  phase_ = TrainingPhase::lora;
  // LoRA is created on the GPU workers first (adapters from the seed, B = 0,
  // auto ranks from the weight change); the device placement takes its
  // tensors from there.
  const size_t reload = placement_ == Placement::gpu ? workers_.size() : 1;
  std::vector<LoadParametersResponse> loaded(reload);
  RETURN_IF_ERROR(ForEachWorker(reload, [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(loaded[i], workers_[i]->LoadParameters(header, chunks));
    return absl::OkStatus();
  }));
  for (size_t i = 0; i < reload; ++i) {
    ledger_.Record(MakeFinishedTask(AddressOf(workers_[i]), DeviceKind::gpu, "load",
                                    loaded[i].cost(), ChunkBytes(chunks)));
  }
  ledger_.set_trainable_bytes(loaded[0].num_trainable() * int64_t(sizeof(float)));
  const std::map<std::string, int> ranks = KeepLoraRanks(loaded[0]);
  state_.hpt.set_lora_trainable_parameters(loaded[0].num_trainable());
  if (placement_ == Placement::gpu) {
    RETURN_IF_ERROR(JoinGroups());
  } else {
    RETURN_IF_ERROR(MoveToDevices(ranks, std::move(read_state), 0, 0));
  }
  reference_weights_.clear();
  cursor_.main_updates = 0;  // the LoRA model's optimizer is a fresh one
  state_.hpt.set_phase(TrainingPhase::lora);
  pace_from_next_ = true;
  return absl::OkStatus();
}

absl::Status Trainer::SwitchLayers(int64_t steps_done) {
  ASSIGN_OR_RETURN(auto tensors, ModelTensors(/*optimizer_state=*/true));
  // Adam's moments of the layers that freeze now go; the rest keep theirs
  // (new adapters start without).
  const LoadParametersHeader header = FullHeader(steps_done);
  pace_from_next_ = true;  // the switched layers train elsewhere, or less
  std::vector<std::string> switched;
  for (int l : header.lora().layers()) switched.push_back(absl::StrCat("layers.", l, "."));
  for (auto it = tensors.begin(); it != tensors.end();) {
    const std::string& name = it->first;
    bool frozen = false;
    if (name.find('@') != std::string::npos && !absl::StrContains(name, ".lora_") &&
        !absl::EndsWith(name, kInitialSuffix) && !absl::EndsWith(name, kReramReadSuffix)) {
      for (const std::string& prefix : switched) frozen |= absl::StartsWith(name, prefix);
    }
    it = frozen ? tensors.erase(it) : std::next(it);
  }
  if (placement_ != Placement::gpu)
    return SwitchLayersToDevices(header, std::move(tensors), steps_done);
  std::vector<TensorChunk> chunks = SplitTensors(tensors);
  std::vector<LoadParametersResponse> loaded(workers_.size());
  RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(loaded[i], workers_[i]->LoadParameters(header, chunks));
    return absl::OkStatus();
  }));
  const int64_t bytes = ChunkBytes(chunks);
  for (size_t i = 0; i < workers_.size(); ++i) {
    ledger_.Record(
        MakeFinishedTask(AddressOf(workers_[i]), DeviceKind::gpu, "load", loaded[i].cost(), bytes));
  }
  KeepLoraRanks(loaded[0]);
  return JoinGroups();
}

absl::Status Trainer::SwitchLayersToDevices(const LoadParametersHeader& header,
                                            std::map<std::string, HostTensor> tensors,
                                            int64_t steps_done) {
  std::map<std::string, HostTensor> read_state = TakeSuffixed(kReramReadSuffix, &tensors);
  // The adapters are made on the first GPU worker (seeded, B = 0, auto
  // ranks from the reference weights), as at the whole model's switch.
  WorkerClient* gpu = workers_[0];
  const std::vector<TensorChunk> chunks = SplitTensors(GpuModelTensors(std::move(tensors)));
  ASSIGN_OR_RETURN(LoadParametersResponse loaded, gpu->LoadParameters(header, chunks));
  ledger_.Record(
      MakeFinishedTask(AddressOf(gpu), DeviceKind::gpu, "load", loaded.cost(), ChunkBytes(chunks)));
  return MoveToDevices(KeepLoraRanks(loaded), std::move(read_state), cursor_.main_updates,
                       steps_done);
}

std::map<std::string, int> Trainer::KeepLoraRanks(const LoadParametersResponse& loaded) {
  std::map<std::string, int> ranks;
  for (const auto& [name, rank] : loaded.lora_ranks()) {
    ranks[name] = rank;
    (*state_.hpt.mutable_lora_ranks())[name] = rank;
  }
  return ranks;
}

absl::Status Trainer::MoveToDevices(const std::map<std::string, int>& ranks,
                                    std::map<std::string, HostTensor> read_state,
                                    int64_t optimizer_steps, int64_t steps_done) {
  // The full phase (layerwise) keeps its Adam moments; the LoRA phase
  // starts a fresh optimizer.
  const bool partial = phase_ == TrainingPhase::full;
  ASSIGN_OR_RETURN(std::vector<TensorChunk> made, workers_[0]->Snapshot(job_id_, {}, partial));
  ASSIGN_OR_RETURN(auto params, AssembleChunks(made));
  reference_weights_ = TakeSuffixed(kInitialSuffix, &params);
  params.merge(read_state);
  AddTokenEncoding(data_->num_tokens(), model_.d_model(), &params);
  RETURN_IF_ERROR(StartHybrid(params, ranks, optimizer_steps, steps_done));
  for (WorkerClient* w : workers_) w->Release(job_id_).IgnoreError();
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, HostTensor>> Trainer::ModelTensors(bool optimizer_state) {
  if (hybrid_ != nullptr) {
    ASSIGN_OR_RETURN(auto tensors, hybrid_->Parameters(optimizer_state));
    if (optimizer_state) {
      for (const auto& [name, t] : reference_weights_) tensors[name] = t;
    }
    return tensors;
  }
  ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks,
                   workers_[0]->Snapshot(job_id_, {}, optimizer_state));
  return AssembleChunks(chunks);
}

absl::Status Trainer::StartHybrid(const std::map<std::string, HostTensor>& params,
                                  const std::map<std::string, int>& ranks, int64_t optimizer_steps,
                                  int64_t steps_done) {
  // Before the job's switch only some layers have switched (layerwise).
  const bool partial = phase_ == TrainingPhase::full;
  HybridPlanOptions plan_options;
  if (partial) {
    const std::vector<int> switched = controller_->SwitchedLayers();
    for (int l = 0; l < model_.num_layers(); ++l) {
      if (std::find(switched.begin(), switched.end(), l) == switched.end()) {
        plan_options.full_layers.push_back(l);
      }
    }
  }
  plan_options.placement = spec_.hpt().placement();
  plan_options.reram_workers = int(options_.reram_workers.size());
  plan_options.systolic_workers = int(options_.systolic_workers.size());
  plan_options.seed = spec_.training().seed();
  plan_options.vectors_per_step = int64_t(spec_.training().batch_size()) * data_->num_tokens();
  if (spec_.hpt().reram_chip_tiles() > 0) {
    plan_options.chip.tiles = spec_.hpt().reram_chip_tiles();
  }
  ASSIGN_OR_RETURN(HybridPlan plan, PlanHybrid(model_, spec_.hpt().lora(), ranks, plan_options));
  DescribeReramLayers(plan, &state_.hpt);
  ledger_.SetReramChips(plan, options_.reram_workers);
  // The segments of an earlier plan would otherwise stay on the workers.
  if (hybrid_ != nullptr) hybrid_->Release();
  hybrid_ = std::make_unique<HybridRunner>(
      job_id_, std::move(plan), options_.reram_workers, options_.systolic_workers,
      partial ? spec_.training().optimizer() : spec_.hpt().lora_optimizer());
  std::map<std::string, int64_t> steps_by_prefix;
  if (partial) {
    const LoadParametersHeader full = FullHeader(steps_done);
    steps_by_prefix.insert(full.optimizer_steps_by_prefix().begin(),
                           full.optimizer_steps_by_prefix().end());
  }
  return hybrid_->Load(params, ledger_.sink(), optimizer_steps, steps_by_prefix);
}

void Trainer::RecordEvents() {
  const std::vector<ControllerEvent>& events = controller_->events();
  const int64_t now_ms = absl::ToUnixMillis(options_.now());
  for (; events_seen_ < events.size(); ++events_seen_) {
    *state_.hpt.add_events() = ToPhaseEvent(events[events_seen_], now_ms);
  }
}

absl::Status Trainer::ControlPhase(const std::vector<int64_t>& indices, int64_t step,
                                   double learning_rate, double loss, bool* switched,
                                   const GpuTasks::Run* run, size_t run_step) {
  double trial_loss = 0;
  if (cursor_.trial_active) {
    ledger_.set_chain(Chain::kTrial);
    if (run != nullptr) {  // RunSteps recorded its tasks
      trial_loss = run->trial_losses.at(run_step);
    } else {
      HostTensor x, y;
      data_->Gather(data_->train_starts(), indices, &x, &y);
      ASSIGN_OR_RETURN(trial_loss,
                       gpu_.TrialStep(x, y, step, spec_.hpt().lora_optimizer().learning_rate()));
    }
    ++cursor_.trial_updates;
  }
  ledger_.set_chain(Chain::kNone);
  if (options_.switch_policy != nullptr) return AskPolicy(step, loss, trial_loss, switched);
  WindowDistances distances;
  const bool window_end = controller_->NeedsWeightDistance(step);
  if (window_end) {
    ASSIGN_OR_RETURN(distances, WeightDistances());
  }
  const PhaseController::Action action =
      controller_->Step(step, loss, trial_loss, distances.tracked, distances.layers);
  RecordEvents();
  if (window_end) {  // the layers' switches change only at a check
    const std::vector<int64_t>& layer_steps = controller_->layer_switch_steps();
    state_.hpt.mutable_layer_switch_steps()->Assign(layer_steps.begin(), layer_steps.end());
  }
  if (action == PhaseController::Action::kStartTrial ||
      action == PhaseController::Action::kRestartTrial) {
    ledger_.set_chain(Chain::kTrial);
    RETURN_IF_ERROR(StartTrial());
    state_.hpt.set_phase(TrainingPhase::trial);
  } else if (action == PhaseController::Action::kSwitchLayers) {
    ledger_.set_chain(Chain::kSwitch);
    RETURN_IF_ERROR(SwitchLayers(step + 1));
  } else if (action == PhaseController::Action::kSwitch) {
    ledger_.set_chain(Chain::kSwitch);
    RETURN_IF_ERROR(Switch());
    state_.hpt.set_switch_step(step + 1);
    *switched = true;
  } else if (controller_->phase() == TrainingPhase::full) {
    state_.hpt.set_phase(TrainingPhase::full);
  }
  return absl::OkStatus();
}

absl::Status Trainer::AskPolicy(int64_t step, double loss, double trial_loss, bool* switched) {
  const int64_t k = std::max<int64_t>(1, spec_.hpt().check_window_steps());
  ControllerSample sample{step, loss, trial_loss, 0};
  if ((step + 1) % k == 0) {
    ASSIGN_OR_RETURN(WindowDistances distances, WeightDistances());
    sample.weight_distance = distances.tracked;
  }
  switch (options_.switch_policy->AfterStep(sample)) {
    case SwitchPolicy::Decision::kContinue:
      break;
    case SwitchPolicy::Decision::kRestartTrial:
      ledger_.set_chain(Chain::kTrial);
      RETURN_IF_ERROR(StartTrial());  // a fresh copy in place of the last
      ledger_.set_chain(Chain::kNone);
      break;
    case SwitchPolicy::Decision::kSwitch:
      RETURN_IF_ERROR(SwitchNow(step + 1));
      *switched = true;
      break;
  }
  return absl::OkStatus();
}

absl::Status Trainer::SwitchNow(int64_t step) {
  ledger_.set_chain(Chain::kSwitch);
  RETURN_IF_ERROR(Switch());
  ledger_.set_chain(Chain::kNone);
  state_.hpt.set_switch_step(step);
  ControllerEvent forced;
  forced.kind = ControllerEvent::Kind::kSwitch;
  forced.step = step - 1;
  forced.reason = "switch forced at this step by a switch policy";
  *state_.hpt.add_events() = ToPhaseEvent(forced, absl::ToUnixMillis(options_.now()));
  return absl::OkStatus();
}

}  // namespace hpt
