#include "coordinator/training/phase_controller.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace hpt {

PhaseController::PhaseController(PhaseControllerOptions options)
    : options_(std::move(options)) {
  options_.check_window_steps = std::max<int64_t>(1, options_.check_window_steps);
}

bool PhaseController::ThreePointTest(const double v[3], double threshold) {
  if (!(v[0] > 0) || !(v[1] > 0)) return false;
  const double drop01 = v[0] - v[1], drop12 = v[1] - v[2];
  return drop01 / v[0] < threshold && drop12 / v[1] < threshold && drop12 < drop01;
}

bool PhaseController::NeedsWeightDistance(int64_t step) const {
  return phase_ == TrainingPhase::kFull && WindowEnds(step);
}

// Long because it is the algorithm of the paper's Section 4 as one state
// machine (full, trial, LoRA), each branch beside the event it records.
PhaseController::Action PhaseController::Step(int64_t step, double full_loss,
                                              double trial_loss,
                                              double weight_distance) {
  if (phase_ == TrainingPhase::kLora) return Action::kNone;
  if (phase_ == TrainingPhase::kTrial) {
    trial_full_.push_back(full_loss);
    trial_lora_.push_back(trial_loss);
    if (!WindowEnds(step)) return Action::kNone;
    ControllerEvent end;
    end.kind = ControllerEvent::Kind::kTrialEnd;
    end.step = step;
    end.t_test = StudentTTest(trial_full_, trial_lora_);
    if (trial_full_.size() < size_t(kMinTrialSamples)) {
      // Too few losses to tell anything: never read as "no difference".
      end.reason = absl::StrCat("inconclusive: ", trial_full_.size(), " losses a side, a t-test "
                                "needs ", kMinTrialSamples, ": trial extended");
      events_.push_back(end);
      return Action::kNone;
    }
    end.significant = end.t_test.p_value < options_.alpha;
    events_.push_back(end);
    trial_full_.clear();
    trial_lora_.clear();
    if (end.significant) {
      ControllerEvent again;
      again.kind = ControllerEvent::Kind::kTrialStart;
      again.step = step;
      again.reason = "LoRA loss differs significantly: another trial window";
      events_.push_back(again);
      return Action::kRestartTrial;
    }
    ControllerEvent sw;
    sw.kind = ControllerEvent::Kind::kSwitch;
    sw.step = step;
    sw.reason = "no significant difference between full and LoRA losses";
    events_.push_back(sw);
    phase_ = TrainingPhase::kLora;
    switch_step_ = step + 1;
    return Action::kSwitch;
  }

  // Full phase.
  window_loss_sum_ += full_loss;
  ++window_count_;
  if (!WindowEnds(step)) return Action::kNone;
  window_losses_.push_back(window_loss_sum_ / double(window_count_));
  distances_.push_back(weight_distance);
  window_loss_sum_ = 0;
  window_count_ = 0;
  if (window_losses_.size() < 3) return Action::kNone;
  ControllerEvent check;
  check.kind = ControllerEvent::Kind::kCheck;
  check.step = step;
  const size_t n = window_losses_.size();
  for (int i = 0; i < 3; ++i) {
    check.losses[i] = window_losses_[n - 3 + i];
    check.distances[i] = distances_[n - 3 + i];
  }
  check.loss_passed = ThreePointTest(check.losses, options_.loss_threshold);
  check.weight_passed = ThreePointTest(check.distances, options_.weight_threshold);
  // Divergence: the loss rose in both windows. One higher window on a noisy
  // plateau is not (it happens half the time).
  const bool rising = check.losses[0] < check.losses[1] && check.losses[1] < check.losses[2];
  if (!check.loss_passed || !check.weight_passed) {
    check.reason = !check.loss_passed ? "loss still falling fast" : "weights still moving";
    if (!check.loss_passed && !check.weight_passed) check.reason = "loss and weights still changing";
    passes_in_a_row_ = 0;
    events_.push_back(check);
    return Action::kNone;
  }
  if (rising && !options_.trial_on_rising_loss) {
    check.reason = "loss rising: not a convergence";
    passes_in_a_row_ = 0;
    events_.push_back(check);
    return Action::kNone;
  }
  if (++passes_in_a_row_ < options_.checks_in_a_row) {
    check.reason = absl::StrCat("passed ", passes_in_a_row_, " of ", options_.checks_in_a_row,
                                " checks in a row");
    events_.push_back(check);
    return Action::kNone;
  }
  passes_in_a_row_ = 0;
  check.reason = "initially converged: start a LoRA trial";
  events_.push_back(check);
  ControllerEvent start;
  start.kind = ControllerEvent::Kind::kTrialStart;
  start.step = step;
  events_.push_back(start);
  phase_ = TrainingPhase::kTrial;
  return Action::kStartTrial;
}

PhaseController::State PhaseController::state() const {
  return State{phase_,      window_loss_sum_, window_count_,      window_losses_,
               distances_,  trial_full_,      trial_lora_,        switch_step_,
               passes_in_a_row_};
}

void PhaseController::Restore(State state) {
  phase_ = state.phase;
  window_loss_sum_ = state.window_loss_sum;
  window_count_ = state.window_count;
  window_losses_ = std::move(state.window_losses);
  distances_ = std::move(state.distances);
  trial_full_ = std::move(state.trial_full);
  trial_lora_ = std::move(state.trial_lora);
  switch_step_ = state.switch_step;
  passes_in_a_row_ = state.passes_in_a_row;
  events_.clear();
}

}  // namespace hpt
