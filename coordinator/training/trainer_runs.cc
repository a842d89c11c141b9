// Trainer's runs: how many steps the next one takes, and a run's steps
// through the phase controller and the ledger as RunStep takes one step.
// The rest of Trainer is in trainer.cc.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/training/trainer.h"

namespace hpt {

int64_t Trainer::AddSamples(LoadParametersHeader* header, std::vector<TensorChunk>* chunks) {
  if (!options_.runs || options_.head_worker != nullptr) return 0;
  *header->mutable_samples() = GpuTasks::SamplesOf(*data_);
  std::vector<TensorChunk> samples = GpuTasks::SampleChunks(*data_);
  const int64_t bytes = ChunkBytes(samples);
  for (TensorChunk& c : samples) chunks->push_back(std::move(c));
  runs_ = true;
  return bytes;
}

void Trainer::CountDispatch(int64_t steps, const GpuTasks::Run* run) {
  const TrainingPhase::Name phase =
      phase_ == TrainingPhase::lora ? TrainingPhase::lora : TrainingPhase::full;
  PhaseDispatch* d = nullptr;
  for (PhaseDispatch& one : *state_.hpt.mutable_dispatch()) {
    if (one.phase() == phase) d = &one;
  }
  if (d == nullptr) {
    d = state_.hpt.add_dispatch();
    d->set_phase(phase);
    d->set_launch(Launch::eager);
  }
  if (run != nullptr) {
    d->set_runs(d->runs() + 1);
    d->set_run_steps(d->run_steps() + steps);
    // The phase launched by graph once any worker replayed a captured
    // step; the newest reason a worker gave for eager steps stays.
    for (const TrainRunResponse& r : run->responses) {
      if (r.launch() == Launch::graph) d->set_launch(Launch::graph);
      if (!r.launch_note().empty()) d->set_launch_note(r.launch_note());
    }
  } else {
    d->set_task_steps(d->task_steps() + steps);
    if (spec_.training().launch() == Launch::graph && d->runs() == 0) {
      d->set_launch_note("graph launches runs of whole steps; this phase's steps went task by "
                         "task (an output head on another device, a fallback placement, or "
                         "workers without runs)");
    }
  }
}

int64_t Trainer::StepsInRun(int64_t step, int64_t s, const std::vector<int64_t>& sizes) const {
  if (!runs_ || options_.head_worker != nullptr || hybrid_ != nullptr ||
      (options_.switch_policy != nullptr && phase_ == TrainingPhase::full) ||
      !options_.fallback_reason.empty()) {
    return 1;
  }
  int64_t n = 1;
  // One shape a run: the epoch's smaller last batch runs on its own.
  while (s + n < int64_t(sizes.size()) && sizes[s + n] == sizes[s]) ++n;
  if (hpt_ && phase_ == TrainingPhase::full) {
    // The controller decides at a window's last step, so a run ends there.
    const int64_t k = std::max<int64_t>(1, controller_->options().check_window_steps);
    n = std::min(n, k - step % k);
  }
  if (options_.checkpoint_every > 0) {
    n = std::min(n, options_.checkpoint_every - step % options_.checkpoint_every);
  }
  if (options_.max_run_steps > 0) n = std::min(n, options_.max_run_steps);
  return std::max<int64_t>(n, 1);
}

absl::Status Trainer::RunSteps(const std::vector<std::vector<int64_t>>& batches, int64_t step,
                               double learning_rate, bool* switched) {
  step_start_ = options_.now();
  const bool lora_step = phase_ == TrainingPhase::lora;
  if (lora_step) learning_rate = spec_.hpt().lora_optimizer().learning_rate();
  state_.progress.set_learning_rate(learning_rate);
  const bool trial = cursor_.trial_active;
  absl::StatusOr<GpuTasks::Run> run = gpu_.DataParallelRun(
      *data_, step, batches, std::vector<double>(batches.size(), learning_rate),
      trial ? spec_.hpt().lora_optimizer().learning_rate() : 0);
  if (absl::IsUnimplemented(run.status())) {
    runs_ = false;  // these workers take task calls only (nothing was trained)
    for (size_t j = 0; j < batches.size(); ++j) {
      RETURN_IF_ERROR(RunStep(batches[j], step + int64_t(j), learning_rate, switched));
    }
    return absl::OkStatus();
  }
  if (!run.ok()) return run.status();
  CountDispatch(int64_t(batches.size()), &*run);
  const double wall_s = absl::ToDoubleSeconds(options_.now() - step_start_) / batches.size();
  const int width = workers_.size() > 1 ? int(workers_.size()) : 1;
  for (size_t j = 0; j < batches.size(); ++j) {
    const int64_t at = step + int64_t(j);
    if (*switched || cursor_.trial_active != trial) {
      return absl::InternalError(absl::StrCat(
          "the phase controller acted at step ", at - 1, ", inside a run that ends at step ",
          step + int64_t(batches.size()) - 1));
    }
    if (j == 0) {
      ledger_.set_chain(Chain::kMain);
      gpu_.RecordRunStep(*run);
      if (trial) {
        ledger_.set_chain(Chain::kTrial);
        gpu_.RecordRunTrialStep(*run);
      }
      ledger_.set_chain(Chain::kNone);
    } else {
      ledger_.RecordLikeLastStep();  // every step of a run has the run's costs
    }
    const double loss = run->losses[j];
    RETURN_IF_ERROR(CheckTrainingLoss(loss, at, learning_rate));
    ++cursor_.main_updates;
    if (hpt_ && phase_ == TrainingPhase::full) {
      RETURN_IF_ERROR(ControlPhase(batches[j], at, learning_rate, loss, switched, &*run, j));
    }
    ledger_.set_chain(Chain::kNone);
    ledger_.CloseStep(at, lora_step ? CostPhase::lora : CostPhase::full, width, wall_s);
    // One report a run: its steps arrive together, and a report re-costs
    // the record (the controller acts at the run's last step only).
    FinishStep(at + 1, int64_t(batches[j].size()), loss, j + 1 == batches.size());
  }
  return absl::OkStatus();
}

}  // namespace hpt
