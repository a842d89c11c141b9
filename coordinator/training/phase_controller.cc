#include "coordinator/training/phase_controller.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check_windows.h"
#include "coordinator/training/switch_criteria.h"

namespace hpt {

PhaseController::PhaseController(PhaseControllerOptions options)
    : options_(std::move(options)) {
  options_.check_window_steps = std::max<int64_t>(1, options_.check_window_steps);
}

bool PhaseController::ThreePointTest(const double v[3], double threshold) {
  return ThreePointOutcome(v, threshold, "").passed;
}

bool PhaseController::NeedsWeightDistance(int64_t step) const {
  return phase_ == TrainingPhase::full && WindowEnds(step);
}

// A trial step: the trial window's losses, and at its end the trial test.
PhaseController::Action PhaseController::TrialStep(int64_t step, double full_loss,
                                                   double trial_loss) {
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
  std::string again_reason = "LoRA loss differs significantly: another trial window";
  std::string switch_reason = "no significant difference between full and LoRA losses";
  if (options_.trial_test == TrialTest::margin) {
    const TestOutcome margin = MarginOutcome(trial_full_, trial_lora_, options_.trial_margin,
                                             options_.alpha);
    end.significant = !margin.passed;
    end.trial_margin = margin.margin;
    end.trial_detail = margin.detail;
    again_reason = "LoRA loss not shown within the margin: another trial window";
    switch_reason = "LoRA loss within the margin of the full model's";
  } else {
    end.significant = end.t_test.p_value < options_.alpha;
  }
  events_.push_back(end);
  trial_full_.clear();
  trial_lora_.clear();
  if (end.significant) {
    ControllerEvent again;
    again.kind = ControllerEvent::Kind::kTrialStart;
    again.step = step;
    again.reason = again_reason;
    events_.push_back(again);
    return Action::kRestartTrial;
  }
  return SwitchAfter(step, switch_reason);
}

PhaseController::Action PhaseController::SwitchAfter(int64_t step, std::string reason) {
  ControllerEvent sw;
  sw.kind = ControllerEvent::Kind::kSwitch;
  sw.step = step;
  sw.reason = std::move(reason);
  events_.push_back(sw);
  phase_ = TrainingPhase::lora;
  switch_step_ = step + 1;
  return Action::kSwitch;
}

// The algorithm of the paper's Section 4 as one state machine (full,
// trial, LoRA): a full-phase step closes a window every
// check_window_steps, and a window's end runs the rule's check.
PhaseController::Action PhaseController::Step(int64_t step, double full_loss,
                                              double trial_loss, double weight_distance,
                                              const std::vector<double>& layer_distances) {
  if (phase_ == TrainingPhase::lora) return Action::kNone;
  if (phase_ == TrainingPhase::trial) return TrialStep(step, full_loss, trial_loss);
  // Full phase.
  window_loss_sum_ += full_loss;
  window_loss_square_sum_ += full_loss * full_loss;
  ++window_count_;
  if (!WindowEnds(step)) return Action::kNone;
  const double n = double(window_count_), mean = window_loss_sum_ / n;
  window_losses_.push_back(mean);
  window_variances_.push_back(
      n > 1 ? std::max(0.0, (window_loss_square_sum_ - n * mean * mean) / (n - 1)) : 0);
  distances_.push_back(weight_distance);
  if (options_.rule == SwitchRule::layerwise) {
    if (layer_distances_.empty()) {
      layer_distances_.resize(layer_distances.size());
      layer_switch_steps_.assign(layer_distances.size(), -1);
    }
    for (size_t l = 0; l < layer_distances_.size() && l < layer_distances.size(); ++l) {
      layer_distances_[l].push_back(layer_distances[l]);
    }
  }
  window_loss_sum_ = 0;
  window_loss_square_sum_ = 0;
  window_count_ = 0;
  const size_t needed = size_t(FirstCheckWindows(options_.rule, options_.trend_windows));
  if (window_losses_.size() < needed) return Action::kNone;
  if (options_.rule == SwitchRule::layerwise) return AfterLayerCheck(Check(step));
  return AfterCheck(Check(step));
}

ControllerEvent PhaseController::Check(int64_t step) const {
  ControllerEvent check;
  check.kind = ControllerEvent::Kind::kCheck;
  check.step = step;
  const size_t n = window_losses_.size();
  for (int i = 0; i < 3; ++i) {
    check.losses[i] = window_losses_[n - 3 + i];
    check.distances[i] = distances_[n - 3 + i];
  }
  TestOutcome loss, weights;
  switch (options_.rule) {
    // The paper's tests (consecutive: m passing checks in a row); so too an
    // unset or out-of-range rule, which the spec's normalising refuses.
    case SwitchRule::paper:
    case SwitchRule::consecutive:
    default:
      loss = ThreePointOutcome(check.losses, options_.loss_threshold, "loss");
      weights = ThreePointOutcome(check.distances, options_.weight_threshold, "weights");
      break;
    case SwitchRule::trend: {
      const size_t m = size_t(std::max<int64_t>(3, options_.trend_windows));
      const double left =
          options_.total_steps > 0
              ? double(options_.total_steps - step - 1) / double(options_.check_window_steps)
              : 1;
      loss = TrendOutcome(std::vector<double>(window_losses_.end() - m, window_losses_.end()),
                          left, options_.trend_gain);
      weights.passed = true;
      break;
    }
    case SwitchRule::plateau: {
      const int64_t k = options_.check_window_steps;
      loss = PlateauOutcome({window_losses_[n - 2], window_variances_[n - 2], k},
                            {window_losses_[n - 1], window_variances_[n - 1], k},
                            options_.plateau_z);
      weights.passed = true;
      break;
    }
    case SwitchRule::layerwise:
      CheckLayers(&check);
      return check;
  }
  check.loss_passed = loss.passed;
  check.weight_passed = weights.passed;
  check.loss_margin = loss.margin;
  check.weight_margin = weights.margin;
  check.loss_detail = loss.detail;
  check.weight_detail = weights.detail;
  if (!check.loss_passed || !check.weight_passed) {
    check.reason = !check.loss_passed ? "loss still falling fast" : "weights still moving";
    if (!check.loss_passed && !check.weight_passed) {
      check.reason = "loss and weights still changing";
    }
  }
  return check;
}

bool PhaseController::MarkRisingLoss(ControllerEvent* check) const {
  // Divergence: the loss rose in both windows. One higher window on a noisy
  // plateau is not (it happens half the time).
  const double* l = check->losses;
  if (!(l[0] < l[1] && l[1] < l[2]) || options_.trial_on_rising_loss) return false;
  check->reason = "loss rising: not a convergence";
  check->loss_rising = true;
  return true;
}

PhaseController::Action PhaseController::AfterCheck(ControllerEvent check) {
  if (!check.reason.empty()) {  // a test failed
    passes_in_a_row_ = 0;
    events_.push_back(check);
    return Action::kNone;
  }
  if (MarkRisingLoss(&check)) {
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
  if (options_.trial_test == TrialTest::none) {
    check.reason = "initially converged: switch (no trial)";
    events_.push_back(check);
    return SwitchAfter(check.step, "hpt.trial_test none: the check decides");
  }
  check.reason = "initially converged: start a LoRA trial";
  events_.push_back(check);
  ControllerEvent start;
  start.kind = ControllerEvent::Kind::kTrialStart;
  start.step = check.step;
  events_.push_back(start);
  phase_ = TrainingPhase::trial;
  return Action::kStartTrial;
}

void PhaseController::CheckLayers(ControllerEvent* check) const {
  // The loss is not tested: each layer's own weights decide.
  check->loss_passed = true;
  check->loss_margin = 0;
  double closest = -1;
  for (size_t l = 0; l < layer_distances_.size(); ++l) {
    const std::vector<double>& d = layer_distances_[l];
    if (layer_switch_steps_[l] >= 0 || d.size() < 3) continue;
    const double last3[3] = {d[d.size() - 3], d[d.size() - 2], d[d.size() - 1]};
    const TestOutcome test = ThreePointOutcome(last3, options_.weight_threshold, "weights");
    if (test.passed) check->switched_layers.push_back(int(l));
    if (closest < 0 || test.margin < closest) {
      closest = test.margin;
      check->weight_margin = test.margin;
      check->weight_detail = absl::StrCat("layer ", l, ": ", test.detail);
      std::copy(last3, last3 + 3, check->distances);
    }
  }
  check->weight_passed = !check->switched_layers.empty();
  if (!check->weight_passed) check->reason = "weights still moving in every training layer";
}

PhaseController::Action PhaseController::AfterLayerCheck(ControllerEvent check) {
  if (!check.reason.empty()) {
    events_.push_back(check);
    return Action::kNone;
  }
  if (MarkRisingLoss(&check)) {
    check.switched_layers.clear();
    events_.push_back(check);
    return Action::kNone;
  }
  for (int l : check.switched_layers) layer_switch_steps_[size_t(l)] = check.step + 1;
  const std::vector<int> all = SwitchedLayers();
  if (all.size() == layer_switch_steps_.size()) {
    check.reason = "every layer converged: switch";
    events_.push_back(check);
    return SwitchAfter(check.step, "hpt.switch_rule layerwise: the last layers' weights converged");
  }
  check.reason = absl::StrCat("layers ", absl::StrJoin(check.switched_layers, ", "),
                              " converged: LoRA on them (", all.size(), " of ",
                              layer_switch_steps_.size(), " layers)");
  if (check.switched_layers.size() == 1) {
    check.reason = absl::StrCat("layer ", check.switched_layers[0], " converged: LoRA on it (",
                                all.size(), " of ", layer_switch_steps_.size(), " layers)");
  }
  events_.push_back(check);
  return Action::kSwitchLayers;
}

std::vector<int> PhaseController::SwitchedLayers() const {
  std::vector<int> out;
  for (size_t l = 0; l < layer_switch_steps_.size(); ++l) {
    if (layer_switch_steps_[l] >= 0) out.push_back(int(l));
  }
  return out;
}

PhaseController::State PhaseController::state() const {
  State s;
  s.phase = phase_;
  s.window_loss_sum = window_loss_sum_;
  s.window_loss_square_sum = window_loss_square_sum_;
  s.window_count = window_count_;
  s.window_losses = window_losses_;
  s.window_variances = window_variances_;
  s.distances = distances_;
  s.trial_full = trial_full_;
  s.trial_lora = trial_lora_;
  s.switch_step = switch_step_;
  s.passes_in_a_row = passes_in_a_row_;
  s.layer_distances = layer_distances_;
  s.layer_switch_steps = layer_switch_steps_;
  return s;
}

void PhaseController::Restore(State state) {
  phase_ = state.phase;
  window_loss_sum_ = state.window_loss_sum;
  window_loss_square_sum_ = state.window_loss_square_sum;
  window_variances_ = std::move(state.window_variances);
  window_count_ = state.window_count;
  window_losses_ = std::move(state.window_losses);
  distances_ = std::move(state.distances);
  trial_full_ = std::move(state.trial_full);
  trial_lora_ = std::move(state.trial_lora);
  switch_step_ = state.switch_step;
  passes_in_a_row_ = state.passes_in_a_row;
  layer_distances_ = std::move(state.layer_distances);
  layer_switch_steps_ = std::move(state.layer_switch_steps);
  events_.clear();
}

int64_t ReplaySwitch(const PhaseControllerOptions& options,
                     const std::vector<ControllerSample>& samples,
                     std::vector<ControllerEvent>* events) {
  PhaseController controller(options);
  for (const ControllerSample& s : samples) {
    const double distance = controller.NeedsWeightDistance(s.step) ? s.weight_distance : 0;
    controller.Step(s.step, s.full_loss, s.trial_loss, distance);
    if (controller.phase() == TrainingPhase::lora) break;
  }
  if (events != nullptr) *events = controller.events();
  return controller.switch_step();
}

}  // namespace hpt
