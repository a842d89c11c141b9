// PhaseController: the HpT phase switch (Dahal et al., TPDS 2025, Sec. 4).
// The trainer feeds it one step at a time.
//
// Every `check_window_steps` steps it closes a window: the mean training loss
// L_j and the weight distance d_j = ||W_j - W_{j-1}||_F of [W_q | W_v] of
// one named layer (W_j: at the end of window j; W_{-1}: at the start).
// Once three windows exist it checks:
//   loss test:   (L0-L1)/L0 < loss_threshold, (L1-L2)/L1 < loss_threshold,
//                and (L1-L2) < (L0-L1)
//   weight test: the same on d0, d1, d2 with weight_threshold.
// Both passing starts a trial: a LoRA copy trains beside the full model on
// the same batches for one window, and a two-sample Student t-test (equal
// variance, two-sided) compares the per-batch losses. p >= alpha: switch to
// the LoRA phase. p < alpha: another trial window with a fresh copy.
//
// A loss that rises faster each window passes the paper's loss test: both
// relative "decreases" are negative, below any positive threshold, and the
// second is below the first. That is divergence, not convergence, so by
// default no trial starts while the loss rose in both windows (L0 < L1 <
// L2; one higher window on a noisy plateau is not divergence); the check is
// recorded with that reason (trial_on_rising_loss restores the paper's rule).
//
// With checks_in_a_row m > 1, a trial starts only at the m-th passing check
// in a row; a failing check starts the count again.
//
// The rule (hpt.switch_rule) decides what a check tests: the paper's
// three-point tests above (paper, consecutive), or, on the loss alone,
// the trend or plateau test of switch_criteria.h. Under layerwise each
// encoder layer has its own distance series (the trainer passes every
// layer's ||[W_q | W_v]|| change per window) and switches alone when the
// paper's weight test passes on it (Action::kSwitchLayers): its weights
// freeze under a LoRA adapter while the other layers train on in full
// (the partial convergence of PreLoRA, Thapa et al., arXiv 2509.21619).
// The job's switch is the check at which the last layer passes; there is
// no trial, and the divergence guard holds any layer back. Every check records each
// test's margin (below 1 passes) and what decided it, so a job that never
// switches can say how close it came. The divergence guard, the trial and
// its t-test are the same under every rule; trial_test may end the trial
// with the margin test instead, or leave it out (a passing check switches).
//
// Not thread-safe.
#ifndef HPT_COORDINATOR_TRAINING_PHASE_CONTROLLER_H_
#define HPT_COORDINATOR_TRAINING_PHASE_CONTROLLER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/spec/hpt_defaults.h"
#include "coordinator/training/student_t.h"
#include "proto/job_service.pb.h"

namespace hpt {

struct PhaseControllerOptions {
  // Iterations (training steps) per check window. The paper's k counts
  // samples (swe 365, covid 720, wind 480, weather 8000, at batch size 1);
  // the trainer passes ceil(k / batch size) steps (HptSpec).
  int64_t check_window_steps = 480;
  double loss_threshold = 0.1;    // paper
  double weight_threshold = 0.01; // paper
  double alpha = 0.01;            // paper
  bool trial_on_rising_loss = false;
  // Passing checks in a row that start a trial: 1 is the paper's rule (the
  // first check passing both tests); m > 1 (hpt.switch_rule
  // "consecutive") waits for m consecutive passing checks, so one lucky
  // window on a noisy plateau does not start it.
  int64_t checks_in_a_row = 1;
  // The rule (SwitchRule in proto/job_service.proto) and how a trial ends:
  // the paper's two-sided t-test (switch unless the losses differ
  // significantly), the margin test of switch_criteria.h (switch when
  // LoRA's loss is shown to be within a margin of the full model's), or no
  // trial at all (a passing check switches). Set from a normalised spec.
  SwitchRule::Name rule = kDefaultSwitchRule;
  // trend: windows in the line, and the bound on what is left to gain, a
  // fraction of the loss; the run's length in steps (0: unknown, so one
  // window is left).
  int64_t trend_windows = kDefaultTrendWindows;
  double trend_gain = kDefaultTrendGain;
  int64_t total_steps = 0;
  // plateau: standard errors of the drop between two window means.
  double plateau_z = kDefaultPlateauZ;
  TrialTest::Name trial_test = kDefaultTrialTest;
  // margin: LoRA's excess loss allowed, a fraction of the full model's.
  double trial_margin = kDefaultTrialMargin;
};

// The fewest losses a side the trial's t-test decides on: with fewer the
// trial ends "inconclusive" and goes on for another window (a spec's check
// window spans at least this many steps: coordinator/spec/hpt_spec.cc).
inline constexpr int kMinTrialSamples = 3;

struct ControllerEvent {
  enum class Kind { kCheck, kTrialStart, kTrialEnd, kSwitch };
  Kind kind = Kind::kCheck;
  int64_t step = 0;  // the last step of the window it closes
  // kCheck
  double losses[3] = {0, 0, 0};
  double distances[3] = {0, 0, 0};
  bool loss_passed = false, weight_passed = false;
  // Each test's statistic over its bound (< 1 passes; the weight margin is
  // 0 under rules that read the loss only) and the part that decided.
  double loss_margin = 0, weight_margin = 0;
  std::string loss_detail, weight_detail;
  std::string reason;
  // kCheck: both tests passed on a loss that rose in each window, so no
  // trial began (PhaseControllerOptions::trial_on_rising_loss false).
  bool loss_rising = false;
  // kCheck under layerwise: the layers that switch at it.
  std::vector<int> switched_layers;
  // kTrialEnd: the t-test's figures (under either trial test), whether the
  // trial rejected the switch, and under the margin test its margin and
  // detail (as a check's).
  TTestResult t_test;
  bool significant = false;
  double trial_margin = 0;
  std::string trial_detail;
};

class PhaseController {
 public:
  explicit PhaseController(PhaseControllerOptions options);

  TrainingPhase::Name phase() const { return phase_; }
  // True when the trainer must pass the weight distance with this
  // step (the last of a full-phase window).
  bool NeedsWeightDistance(int64_t step) const;

  enum class Action { kNone, kStartTrial, kRestartTrial, kSwitchLayers, kSwitch };
  // Records step `step` (0-based, consecutive). `trial_loss` is
  // the LoRA copy's loss on the same batch during a trial; `weight_distance`
  // is required when NeedsWeightDistance(step), and under layerwise
  // `layer_distances` too (one per encoder layer, in order).
  Action Step(int64_t step, double full_loss, double trial_loss = 0,
              double weight_distance = 0, const std::vector<double>& layer_distances = {});

  const std::vector<ControllerEvent>& events() const { return events_; }
  int64_t switch_step() const { return switch_step_; }  // -1 before
  // Under layerwise, per encoder layer: the first step it trains as LoRA
  // (-1: still in full); empty before the first window.
  const std::vector<int64_t>& layer_switch_steps() const { return layer_switch_steps_; }
  // The layers switched so far, ascending.
  std::vector<int> SwitchedLayers() const;
  const PhaseControllerOptions& options() const { return options_; }

  // What it carries from one step to the next (checkpoints). The
  // events are the job's history, kept by the trainer, not part of it.
  struct State {
    TrainingPhase::Name phase = TrainingPhase::full;
    double window_loss_sum = 0, window_loss_square_sum = 0;
    int64_t window_count = 0;
    std::vector<double> window_losses, window_variances, distances, trial_full, trial_lora;
    int64_t switch_step = -1;
    int64_t passes_in_a_row = 0;
    std::vector<std::vector<double>> layer_distances;
    std::vector<int64_t> layer_switch_steps;
  };
  State state() const;
  void Restore(State state);

  // The three-point test on consecutive window values.
  static bool ThreePointTest(const double v[3], double threshold);

 private:
  Action TrialStep(int64_t step, double full_loss, double trial_loss);
  // The LoRA phase from step + 1, recorded with `reason`.
  Action SwitchAfter(int64_t step, std::string reason);
  // The check that closes a full-phase window at `step`: the rule's tests,
  // their margins and the reason, before the divergence guard.
  ControllerEvent Check(int64_t step) const;
  // The divergence guard on a check whose tests passed: where the loss rose
  // in both windows and trial_on_rising_loss is off, marks the check
  // (reason, loss_rising) and returns true.
  bool MarkRisingLoss(ControllerEvent* check) const;
  // What follows a check: nothing, or a trial.
  Action AfterCheck(ControllerEvent check);
  // Layerwise: each unswitched layer's weight test (into `check`), and
  // what follows.
  void CheckLayers(ControllerEvent* check) const;
  Action AfterLayerCheck(ControllerEvent check);

  bool WindowEnds(int64_t step) const {
    return (step + 1) % options_.check_window_steps == 0;
  }

  PhaseControllerOptions options_;
  TrainingPhase::Name phase_ = TrainingPhase::full;
  double window_loss_sum_ = 0, window_loss_square_sum_ = 0;
  int64_t window_count_ = 0;
  std::vector<double> window_losses_, window_variances_, distances_;
  std::vector<double> trial_full_, trial_lora_;
  std::vector<ControllerEvent> events_;
  int64_t switch_step_ = -1;
  int64_t passes_in_a_row_ = 0;
  std::vector<std::vector<double>> layer_distances_;
  std::vector<int64_t> layer_switch_steps_;
};

// What a controller reads at one full-phase step: Step's arguments.
struct ControllerSample {
  int64_t step = 0;
  double full_loss = 0, trial_loss = 0, weight_distance = 0;
};

// Replays a full-parameter run's samples through a controller with
// `options`, as the trainer would have fed it: the step its switch would
// come at (the first LoRA-phase step), or -1. The samples must hold a
// trial loss at every step a trial of it could run: those of a run that
// trained a fresh LoRA copy from each window's end over the next window
// (switch_policy.h's SamplingPolicy); a trial under any rule starts
// from such a window end, so the replay is exact. `events`, if given,
// receives the controller's events.
int64_t ReplaySwitch(const PhaseControllerOptions& options,
                     const std::vector<ControllerSample>& samples,
                     std::vector<ControllerEvent>* events = nullptr);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_PHASE_CONTROLLER_H_
