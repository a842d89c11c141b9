// The convergence tests a switch rule applies at the end of a check
// window (hpt.switch_rule; docs/method.md "Switch rules"). Each returns
// whether it passed and how close it came: `margin`, the test's statistic
// over its bound, is below 1 exactly when it passes, so the smallest
// margin of a job's checks is the closest it came to switching, and
// `detail` says in words which part decided.
//
//   paper    ThreePointOutcome on the last three windows' mean losses (and
//            on the weight distances): each relative drop under the
//            threshold, the second drop smaller than the first.
//   trend    TrendOutcome: a least-squares line through the last m window
//            losses; the 95 % upper bound of its fall per window, carried
//            over the windows the run has left, is under `gain` of the
//            loss: even at the fastest rate the data allow, the full model
//            has less than that to gain by going on.
//   plateau  PlateauOutcome: the last window's mean is not significantly
//            below the one before: the drop under z standard errors of
//            the difference of the two means (per-step losses' variance).
//
// And the test a trial may end with instead of the paper's t-test
// (hpt.trial_test "margin"):
//
//   margin   MarginOutcome: a non-inferiority test on the trial's paired
//            losses (both copies see the same batches): the one-sided
//            1 - alpha upper bound of LoRA's mean excess loss is under
//            `margin` of the full model's mean loss. The paper's two-sided
//            test asks whether the losses differ at all, and over a long
//            window it resolves any gap; this asks whether the gap is
//            small (Schuirmann, J. Pharmacokin. Biopharm. 15, 1987; its
//            one-sided half).
#ifndef HPT_COORDINATOR_TRAINING_SWITCH_TESTS_H_
#define HPT_COORDINATOR_TRAINING_SWITCH_TESTS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hpt {

struct TestOutcome {
  bool passed = false;
  double margin = 0;   // statistic / bound: < 1 passes
  std::string detail;  // e.g. "second drop 10.7 % (bound 10 %)"
};

// The paper's three-point test on v[0..2] (window means of one series).
// `what`: "loss" or "weights", for the detail.
TestOutcome ThreePointOutcome(const double v[3], double threshold, const std::string& what);

// `losses`: the last m >= 3 window means, oldest first; `windows_left`:
// windows the run has after the last; `gain`: the bound, a fraction of
// the loss.
TestOutcome TrendOutcome(const std::vector<double>& losses, double windows_left, double gain);

// Two windows' per-step losses as mean, sample variance and count.
struct WindowMoments {
  double mean = 0, variance = 0;
  int64_t n = 0;
};
TestOutcome PlateauOutcome(const WindowMoments& before, const WindowMoments& last, double z);

// `full`, `lora`: the trial's losses, step by step on the same batches.
// The margin is a fraction of the full model's mean loss.
TestOutcome MarginOutcome(const std::vector<double>& full, const std::vector<double>& lora,
                          double margin, double alpha);

// The q-quantile of Student's t with `dof` degrees of freedom (0 < q < 1).
double StudentQuantile(double q, double dof);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_SWITCH_TESTS_H_
