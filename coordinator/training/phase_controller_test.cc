#include "coordinator/training/phase_controller.h"

#include <cmath>

#include "gtest/gtest.h"

namespace hpt {
namespace {

using Action = PhaseController::Action;

PhaseControllerOptions Options(int64_t window) {
  PhaseControllerOptions o;
  o.check_window_steps = window;
  return o;
}

// Window-mean losses and distances per window; each window's steps
// all carry its mean (so the window mean is exact).
struct Script {
  std::vector<double> losses, distances;
};

// Feeds full-phase windows until an action other than kNone; returns the
// step it happened at, or -1.
int64_t RunFull(PhaseController& c, const Script& s, int64_t window,
                Action* action) {
  int64_t it = 0;
  for (size_t w = 0; w < s.losses.size(); ++w) {
    for (int64_t i = 0; i < window; ++i, ++it) {
      const double d = c.NeedsWeightDistance(it) ? s.distances[w] : 0;
      *action = c.Step(it, s.losses[w], 0, d);
      if (*action != Action::kNone) return it;
    }
  }
  return -1;
}

// Three 3-step windows whose loss and weight drops shrink under the
// paper's thresholds: the first check, at step 8, passes. Returns its
// action.
Action RunToPassingCheck(PhaseController& c) {
  Script s{{1.0, 0.97, 0.95}, {1.0, 0.995, 0.991}};
  Action a = Action::kNone;
  EXPECT_EQ(RunFull(c, s, 3, &a), 8);
  return a;
}

TEST(PhaseControllerTest, ThreePointTestFollowsThePaper) {
  const double plateau[3] = {1.0, 0.95, 0.93};  // 5 %, 2.1 %, slowing
  EXPECT_TRUE(PhaseController::ThreePointTest(plateau, 0.1));
  const double fast[3] = {1.0, 0.8, 0.7};  // 20 % drop: still learning
  EXPECT_FALSE(PhaseController::ThreePointTest(fast, 0.1));
  const double speeding_up[3] = {1.0, 0.98, 0.95};  // second drop larger
  EXPECT_FALSE(PhaseController::ThreePointTest(speeding_up, 0.1));
  // A loss rising faster each window passes: the paper's loophole.
  const double diverging[3] = {1.0, 1.05, 1.15};
  EXPECT_TRUE(PhaseController::ThreePointTest(diverging, 0.1));
  const double rising_slower[3] = {1.0, 1.1, 1.15};
  EXPECT_FALSE(PhaseController::ThreePointTest(rising_slower, 0.1));
}

TEST(PhaseControllerTest, ChecksEachWindowThenTrialsThenSwitches) {
  const int64_t k = 4;
  PhaseController c(Options(k));
  // Windows 0..4: the loss plateaus from window 2 on, the weights from
  // window 3 on (distances: relative changes under 1 % and slowing).
  Script s{{1.0, 0.6, 0.55, 0.54, 0.535}, {10.0, 5.0, 4.0, 3.99, 3.985}};
  Action a;
  const int64_t at = RunFull(c, s, k, &a);
  // Checks close windows 2 (step 11), 3 (15) and 4 (19). Window 2:
  // loss (1, .6, .55) fails (40 % drop); window 3: (.6, .55, .54) passes,
  // weights (5, 4, 3.99) fail (20 %); window 4: both pass -> trial.
  EXPECT_EQ(at, 19);
  EXPECT_EQ(a, Action::kStartTrial);
  ASSERT_EQ(c.events().size(), 4u);
  EXPECT_EQ(c.events()[0].step, 11);
  EXPECT_FALSE(c.events()[0].loss_passed);
  EXPECT_EQ(c.events()[1].step, 15);
  EXPECT_TRUE(c.events()[1].loss_passed);
  EXPECT_FALSE(c.events()[1].weight_passed);
  EXPECT_EQ(c.events()[2].step, 19);
  EXPECT_TRUE(c.events()[2].loss_passed && c.events()[2].weight_passed);
  EXPECT_DOUBLE_EQ(c.events()[2].losses[0], 0.55);
  EXPECT_DOUBLE_EQ(c.events()[2].distances[2], 3.985);
  EXPECT_EQ(c.events()[3].kind, ControllerEvent::Kind::kTrialStart);
  EXPECT_EQ(c.phase(), TrainingPhase::trial);

  // Trial window 20..23: LoRA losses indistinguishable -> switch at 23.
  const double full[4] = {0.53, 0.54, 0.52, 0.535}, lora[4] = {0.535, 0.53, 0.54, 0.525};
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(c.NeedsWeightDistance(20 + i));
    a = c.Step(20 + i, full[i], lora[i]);
    EXPECT_EQ(a, i < 3 ? Action::kNone : Action::kSwitch);
  }
  EXPECT_EQ(c.phase(), TrainingPhase::lora);
  EXPECT_EQ(c.switch_step(), 24);
  const ControllerEvent& end = c.events()[4];
  EXPECT_EQ(end.kind, ControllerEvent::Kind::kTrialEnd);
  EXPECT_EQ(end.step, 23);
  EXPECT_FALSE(end.significant);
  EXPECT_EQ(end.t_test.degrees_of_freedom, 6);
  EXPECT_GT(end.t_test.p_value, 0.5);
  EXPECT_EQ(c.events()[5].kind, ControllerEvent::Kind::kSwitch);
  EXPECT_EQ(c.Step(24, 0.5), Action::kNone);  // nothing after the switch
}

TEST(PhaseControllerTest, SignificantDifferenceStartsAnotherTrial) {
  PhaseController c(Options(3));
  ASSERT_EQ(RunToPassingCheck(c), Action::kStartTrial);
  // Trial 9..11: LoRA clearly worse -> another trial at 11.
  EXPECT_EQ(c.Step(9, 0.95, 1.50), Action::kNone);
  EXPECT_EQ(c.Step(10, 0.94, 1.52), Action::kNone);
  EXPECT_EQ(c.Step(11, 0.96, 1.49), Action::kRestartTrial);
  EXPECT_TRUE(c.events()[c.events().size() - 2].significant);
  EXPECT_LT(c.events()[c.events().size() - 2].t_test.p_value, 0.01);
  // Trial 12..14: same losses -> switch at 14.
  EXPECT_EQ(c.Step(12, 0.95, 0.951), Action::kNone);
  EXPECT_EQ(c.Step(13, 0.94, 0.939), Action::kNone);
  EXPECT_EQ(c.Step(14, 0.96, 0.962), Action::kSwitch);
  EXPECT_EQ(c.switch_step(), 15);
}

// The margin test asks how large the gap is, not whether there is one:
// LoRA 2 % above the full model on every batch, a gap the paper's t-test
// resolves, is inside a 5 % margin, and a 10 % gap is not.
TEST(PhaseControllerTest, MarginTrialSwitchesOnASmallGapTheTTestRejects) {
  PhaseControllerOptions o = Options(3);
  o.trial_test = TrialTest::margin;
  PhaseController c(o);
  ASSERT_EQ(RunToPassingCheck(c), Action::kStartTrial);
  // Trial 9..11: LoRA 10 % above: not within 5 %.
  EXPECT_EQ(c.Step(9, 0.95, 1.045), Action::kNone);
  EXPECT_EQ(c.Step(10, 0.94, 1.035), Action::kNone);
  EXPECT_EQ(c.Step(11, 0.96, 1.055), Action::kRestartTrial);
  const ControllerEvent& rejected = c.events()[c.events().size() - 2];
  EXPECT_TRUE(rejected.significant);
  EXPECT_NEAR(rejected.trial_margin, 2.0, 1e-6);  // 10 % over 5 %, no spread
  EXPECT_EQ(c.events().back().reason,
            "LoRA loss not shown within the margin: another trial window");
  // Trial 12..14: 0.019 (2 % of the mean) above on every batch.
  EXPECT_EQ(c.Step(12, 0.95, 0.969), Action::kNone);
  EXPECT_EQ(c.Step(13, 0.951, 0.970), Action::kNone);
  EXPECT_EQ(c.Step(14, 0.949, 0.968), Action::kSwitch);
  const ControllerEvent& end = c.events()[c.events().size() - 2];
  EXPECT_LT(end.t_test.p_value, 0.01);  // the paper's test would have gone on
  EXPECT_FALSE(end.significant);
  EXPECT_NEAR(end.trial_margin, 0.4, 1e-6);
  EXPECT_EQ(c.events().back().reason, "LoRA loss within the margin of the full model's");
  EXPECT_EQ(c.switch_step(), 15);
}

// With no trial the first passing check switches, at the next step.
TEST(PhaseControllerTest, NoTrialSwitchesAtThePassingCheck) {
  PhaseControllerOptions o = Options(3);
  o.trial_test = TrialTest::none;
  PhaseController c(o);
  EXPECT_EQ(RunToPassingCheck(c), Action::kSwitch);
  EXPECT_EQ(c.phase(), TrainingPhase::lora);
  EXPECT_EQ(c.switch_step(), 9);
  ASSERT_EQ(c.events().size(), 2u);
  EXPECT_EQ(c.events()[0].reason, "initially converged: switch (no trial)");
  EXPECT_EQ(c.events()[1].kind, ControllerEvent::Kind::kSwitch);
  EXPECT_EQ(c.events()[1].step, 8);
  EXPECT_EQ(c.Step(9, 0.9), Action::kNone);  // the LoRA phase
}

// A trial of fewer than kMinTrialSamples losses a side decides nothing: it
// ends "inconclusive" and goes on (never "no difference: switch" on p = 1).
TEST(PhaseControllerTest, ATrialTooShortForItsTTestIsExtended) {
  const int64_t k = 1;
  Script s{{1.0, 0.97, 0.95}, {1.0, 0.995, 0.991}};
  PhaseController c(Options(k));
  Action a;
  EXPECT_EQ(RunFull(c, s, k, &a), 2);
  ASSERT_EQ(a, Action::kStartTrial);
  EXPECT_EQ(c.Step(3, 0.95, 0.951), Action::kNone);
  ASSERT_EQ(c.events().back().kind, ControllerEvent::Kind::kTrialEnd);
  EXPECT_EQ(c.events().back().reason,
            "inconclusive: 1 losses a side, a t-test needs 3: trial extended");
  EXPECT_FALSE(c.events().back().significant);
  EXPECT_EQ(c.Step(4, 0.94, 0.939), Action::kNone);
  EXPECT_EQ(c.phase(), TrainingPhase::trial);
  // The third loss a side decides: the same losses, so a switch.
  EXPECT_EQ(c.Step(5, 0.96, 0.962), Action::kSwitch);
  EXPECT_TRUE(c.events()[c.events().size() - 2].reason.empty());
  EXPECT_EQ(c.events()[c.events().size() - 2].t_test.degrees_of_freedom, 4);
  EXPECT_EQ(c.switch_step(), 6);
}

TEST(PhaseControllerTest, RisingLossDoesNotStartATrialByDefault) {
  const int64_t k = 2;
  // Diverging: the loss rises faster each window; the weights settle.
  Script s{{1.0, 1.02, 1.06, 1.14}, {1.0, 0.995, 0.991, 0.988}};
  PhaseController c(Options(k));
  Action a;
  EXPECT_EQ(RunFull(c, s, k, &a), -1);
  ASSERT_EQ(c.events().size(), 2u);  // checks at steps 5 and 7
  EXPECT_EQ(c.events()[0].step, 5);
  EXPECT_TRUE(c.events()[0].loss_passed);  // the paper's test accepts it...
  EXPECT_EQ(c.events()[0].reason, "loss rising: not a convergence");
  EXPECT_TRUE(c.events()[0].loss_rising);
  EXPECT_EQ(c.phase(), TrainingPhase::full);

  PhaseControllerOptions paper = Options(k);
  paper.trial_on_rising_loss = true;  // ...and with the paper's behaviour
  PhaseController p(paper);
  EXPECT_EQ(RunFull(p, s, k, &a), 5);
  EXPECT_EQ(a, Action::kStartTrial);
}

TEST(PhaseControllerTest, OneHigherWindowOnAPlateauIsNotDivergence) {
  const int64_t k = 2;
  // Window 3's loss is a little above window 2's (noise on a plateau).
  Script s{{1.0, 0.80, 0.75, 0.76}, {1.0, 0.995, 0.991, 0.988}};
  PhaseController c(Options(k));
  Action a;
  EXPECT_EQ(RunFull(c, s, k, &a), 7);  // check at 5 fails (20 % drop), 7 passes
  EXPECT_EQ(a, Action::kStartTrial);
  EXPECT_EQ(c.events()[1].reason, "initially converged: start a LoRA trial");
  EXPECT_FALSE(c.events()[1].loss_rising);
}

}  // namespace
}  // namespace hpt

namespace hpt {
namespace {

// Windows whose checks pass, fail once, then pass three times: the paper's
// rule trials at the first passing check; "consecutive" (3) only at the
// third of the later run, and a checkpoint's state keeps its count.
TEST(PhaseControllerTest, ConsecutiveRuleWaitsForPassesInARow) {
  const int64_t k = 2;
  // Checks close windows 2..7. Window 2's check passes (plateau), window 3
  // drops 20 % (fails), windows 4..7 plateau again: checks at 5, 6, 7 pass
  // (window 4's check still sees window 3's drop).
  Script s{{1.0, 0.95, 0.94, 0.7, 0.699, 0.6985, 0.6982, 0.6980},
           {1.0, 0.995, 0.9945, 0.994, 0.9936, 0.9933, 0.9931, 0.9930}};
  Action a;
  PhaseController paper(Options(k));
  EXPECT_EQ(RunFull(paper, s, k, &a), 2 * k + k - 1);  // window 2's last step
  EXPECT_EQ(a, Action::kStartTrial);

  PhaseControllerOptions o = Options(k);
  o.checks_in_a_row = 3;
  PhaseController consecutive(o);
  EXPECT_EQ(RunFull(consecutive, s, k, &a), 7 * k + k - 1);
  EXPECT_EQ(a, Action::kStartTrial);
  int waiting = 0;
  for (const ControllerEvent& e : consecutive.events()) {
    if (e.reason.find("checks in a row") != std::string::npos) ++waiting;
  }
  EXPECT_EQ(waiting, 3);  // window 2's check, then 5 and 6

  // Stopped after window 6 and restored: the count goes on from 2.
  PhaseController first(o);
  Script six{std::vector<double>(s.losses.begin(), s.losses.begin() + 7),
             std::vector<double>(s.distances.begin(), s.distances.begin() + 7)};
  EXPECT_EQ(RunFull(first, six, k, &a), -1);
  PhaseController resumed(o);
  resumed.Restore(first.state());
  EXPECT_EQ(resumed.state().passes_in_a_row, 2);
  int64_t it = 7 * k;
  for (; it < 8 * k; ++it) {
    a = resumed.Step(it, s.losses[7], 0, resumed.NeedsWeightDistance(it) ? s.distances[7] : 0);
    if (a != Action::kNone) break;
  }
  EXPECT_EQ(a, Action::kStartTrial);
  EXPECT_EQ(it, 8 * k - 1);
}

TEST(PhaseControllerTest, ChecksRecordEachTestsMarginAndWhatDecidedIt) {
  const int64_t k = 4;
  PhaseController c(Options(k));
  Script s{{1.0, 0.6, 0.55}, {10.0, 5.0, 4.0}};
  Action a;
  RunFull(c, s, k, &a);
  ASSERT_EQ(c.events().size(), 1u);
  const ControllerEvent& e = c.events()[0];
  EXPECT_NEAR(e.loss_margin, 0.4 / 0.1, 1e-9);  // a 40 % first drop, bound 10 %
  EXPECT_NEAR(e.weight_margin, 0.5 / 0.01, 1e-9);
  EXPECT_EQ(e.loss_detail, "loss: first drop 40 % (bound 10 %)");
  EXPECT_EQ(e.weight_detail, "weights: first drop 50 % (bound 1 %)");
}

// Per-step losses alternating +-noise around each window's mean, so the
// window's sample variance is known: noise^2 * k / (k - 1).
int64_t RunNoisy(PhaseController& c, const std::vector<double>& means, double noise,
                 int64_t k) {
  int64_t it = 0;
  for (double m : means) {
    for (int64_t i = 0; i < k; ++i, ++it) {
      const double loss = m + (i % 2 == 0 ? noise : -noise);
      if (c.Step(it, loss, 0, c.NeedsWeightDistance(it) ? 1.0 : 0) != Action::kNone) return it;
    }
  }
  return -1;
}

TEST(PhaseControllerTest, PlateauRuleStartsATrialOnceADropIsWithinTheNoise) {
  const int64_t k = 10;
  PhaseControllerOptions o = Options(k);
  o.rule = SwitchRule::plateau;
  PhaseController c(o);
  // Window means falling 0.1, 0.1, then 0.01; per-step noise 0.05 gives a
  // standard error of sqrt(2 * 0.05^2 * 10/9 / 10) = 0.0236 for a drop:
  // 0.1 is 4.2 SE (falling), 0.01 is 0.42 SE (a plateau).
  EXPECT_EQ(RunNoisy(c, {1.0, 0.9, 0.8, 0.79}, 0.05, k), 39);
  ASSERT_EQ(c.events().size(), 3u);  // checks at windows 2 and 3, then the trial
  EXPECT_FALSE(c.events()[0].loss_passed);
  EXPECT_NEAR(c.events()[0].loss_margin, 0.1 / std::sqrt(2 * 0.0025 * 10 / 9 / 10) / 1.645,
              1e-6);
  EXPECT_TRUE(c.events()[0].weight_passed);  // the rule reads the loss alone
  EXPECT_EQ(c.events()[0].weight_margin, 0);
  EXPECT_TRUE(c.events()[1].loss_passed);
  EXPECT_EQ(c.events()[2].kind, ControllerEvent::Kind::kTrialStart);
}

TEST(PhaseControllerTest, TrendRuleWaitsForItsWindowsAndTheGainLeft) {
  const int64_t k = 4;
  PhaseControllerOptions o = Options(k);
  o.rule = SwitchRule::trend;
  o.trend_windows = 4;
  o.trend_gain = 0.01;
  o.total_steps = 4 * 10;  // ten windows
  PhaseController c(o);
  // Falling 1 % a window, noiseless: at window 3 (the fourth) six windows
  // remain, 6 % to gain: fails; the line's fall times the windows left
  // only drops under 1 % of the loss at the last window.
  Script s{{1.0, 0.99, 0.98, 0.97, 0.96, 0.95, 0.94, 0.93, 0.92, 0.91}, {}};
  s.distances.assign(s.losses.size(), 1.0);
  Action a = Action::kNone;
  const int64_t at = RunFull(c, s, k, &a);
  ASSERT_EQ(c.events().front().step, 4 * 4 - 1);  // no check before 4 windows
  EXPECT_FALSE(c.events().front().loss_passed);
  EXPECT_NEAR(c.events().front().loss_margin, 0.01 * 6 / 0.97 / 0.01, 1e-6);
  // Windows 4..8 leave 5..1 windows: 5.2 %, ..., 1.1 % to gain; the last
  // window leaves none and passes.
  EXPECT_EQ(at, 4 * 10 - 1);
  EXPECT_EQ(a, Action::kStartTrial);
}

TEST(PhaseControllerTest, StateCarriesThePlateauRulesWindowVariances) {
  const int64_t k = 10;
  PhaseControllerOptions o = Options(k);
  o.rule = SwitchRule::plateau;
  PhaseController straight(o), resumed(o);
  EXPECT_EQ(RunNoisy(straight, {1.0, 0.9, 0.8, 0.79}, 0.05, k), 39);
  // The same series, the second controller restored mid-window from a
  // copy that saw the first 25 steps.
  PhaseController first(o);
  int64_t it = 0;
  const std::vector<double> means = {1.0, 0.9, 0.8, 0.79};
  for (; it < 25; ++it) first.Step(it, means[it / k] + (it % 2 == 0 ? 0.05 : -0.05), 0, 1.0);
  resumed.Restore(first.state());
  Action a = Action::kNone;
  for (; it < 40 && a == Action::kNone; ++it) {
    a = resumed.Step(it, means[it / k] + (it % 2 == 0 ? 0.05 : -0.05), 0,
                     resumed.NeedsWeightDistance(it) ? 1.0 : 0);
  }
  EXPECT_EQ(a, Action::kStartTrial);
  EXPECT_EQ(it - 1, 39);
  ASSERT_EQ(resumed.events().size(), straight.events().size());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(resumed.events()[i].loss_margin, straight.events()[i].loss_margin, 1e-12) << i;
  }
}

TEST(PhaseControllerTest, ReplayStopsAtTheSwitchAndReportsIt) {
  const int64_t k = 4;
  std::vector<ControllerSample> samples;
  // The first test's plateau: loss and weights settle from window 3.
  const double losses[] = {1.0, 0.6, 0.55, 0.54, 0.535, 0.53, 0.53};
  const double distances[] = {10.0, 5.0, 4.0, 3.99, 3.985, 3.98, 3.98};
  for (int w = 0; w < 7; ++w) {
    for (int i = 0; i < k; ++i) {
      samples.push_back({w * k + i, losses[w], losses[w] + (i % 2 == 0 ? 0.001 : -0.001),
                         distances[w]});
    }
  }
  std::vector<ControllerEvent> events;
  // Trial over window 5 (steps 20-23): no difference, switch; step 24 is
  // the first LoRA step.
  EXPECT_EQ(ReplaySwitch(Options(k), samples, &events), 24);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, ControllerEvent::Kind::kSwitch);
  samples.resize(20);  // the run ends before its trial does
  EXPECT_EQ(ReplaySwitch(Options(k), samples), -1);
}

// Layerwise: each layer's own distances decide. Layer 0's settle from
// the third window, layer 1's keep halving until the fifth.
TEST(PhaseControllerTest, LayerwiseSwitchesEachLayerOnItsOwnWeights) {
  PhaseControllerOptions o = Options(2);
  o.rule = SwitchRule::layerwise;
  o.weight_threshold = 0.01;
  PhaseController c(o);
  const std::vector<std::vector<double>> d = {
      {1.0, 2.0}, {0.998, 1.0}, {0.997, 0.5}, {0.9965, 0.25}, {0.9962, 0.2496}, {0.996, 0.2493}};
  const std::vector<double> losses = {1.0, 0.9, 0.85, 0.83, 0.82, 0.815};
  std::vector<std::pair<int64_t, Action>> acts;
  int64_t step = 0;
  for (size_t w = 0; w < d.size() && c.phase() == TrainingPhase::full; ++w) {
    for (int i = 0; i < 2; ++i, ++step) {
      const bool end = c.NeedsWeightDistance(step);
      const Action a = c.Step(step, losses[w], 0, end ? d[w][0] : 0,
                              end ? d[w] : std::vector<double>{});
      if (a != Action::kNone) acts.push_back({step, a});
    }
  }
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[0], std::make_pair(int64_t(5), Action::kSwitchLayers));  // window 3's end
  EXPECT_EQ(acts[1], std::make_pair(int64_t(11), Action::kSwitch));      // window 6's end
  EXPECT_EQ(c.layer_switch_steps(), (std::vector<int64_t>{6, 12}));
  EXPECT_EQ(c.switch_step(), 12);
  EXPECT_EQ(c.phase(), TrainingPhase::lora);
  // The checks: layer 0 alone at step 5, nobody at 7 and 9, layer 1 at 11.
  std::vector<std::vector<int>> switched;
  for (const ControllerEvent& e : c.events()) {
    if (e.kind == ControllerEvent::Kind::kCheck) switched.push_back(e.switched_layers);
  }
  ASSERT_EQ(switched.size(), 4u);
  EXPECT_EQ(switched[0], std::vector<int>{0});
  EXPECT_TRUE(switched[1].empty());
  EXPECT_EQ(switched[3], std::vector<int>{1});
  EXPECT_NE(c.events()[0].reason.find("layer 0 converged"), std::string::npos)
      << c.events()[0].reason;
  // The closest unswitched layer's test is the check's weight margin.
  EXPECT_NE(c.events()[1].weight_detail.find("layer 1"), std::string::npos);
  EXPECT_GT(c.events()[1].weight_margin, 1);
}

TEST(PhaseControllerTest, LayerwiseHoldsEveryLayerWhileTheLossRises) {
  PhaseControllerOptions o = Options(1);
  o.rule = SwitchRule::layerwise;
  PhaseController c(o);
  const double losses[3] = {1.0, 1.1, 1.3};
  const double d[3] = {1.0, 0.998, 0.997};  // passing the weight test
  Action last = Action::kNone;
  for (int64_t s = 0; s < 3; ++s) last = c.Step(s, losses[s], 0, d[s], {d[s], d[s]});
  EXPECT_EQ(last, Action::kNone);
  EXPECT_EQ(c.SwitchedLayers(), std::vector<int>{});
  ASSERT_FALSE(c.events().empty());
  EXPECT_EQ(c.events().back().reason, "loss rising: not a convergence");
  EXPECT_TRUE(c.events().back().loss_rising);
}

TEST(PhaseControllerTest, LayerwiseStateRoundTrips) {
  PhaseControllerOptions o = Options(1);
  o.rule = SwitchRule::layerwise;
  PhaseController a(o), b(o);
  const std::vector<std::vector<double>> d = {{1.0, 3.0}, {0.998, 2.0}, {0.997, 1.0},
                                              {0.9965, 0.5}, {0.9962, 0.499}, {0.996, 0.4985}};
  for (int64_t s = 0; s < 3; ++s) a.Step(s, 1.0 - 0.01 * s, 0, d[s][0], d[s]);
  ASSERT_EQ(a.SwitchedLayers(), std::vector<int>{0});
  b.Restore(a.state());
  EXPECT_EQ(b.SwitchedLayers(), std::vector<int>{0});
  for (int64_t s = 3; s < 6; ++s) {
    EXPECT_EQ(a.Step(s, 1.0 - 0.01 * s, 0, d[s][0], d[s]),
              b.Step(s, 1.0 - 0.01 * s, 0, d[s][0], d[s]))
        << s;
  }
  EXPECT_EQ(a.layer_switch_steps(), b.layer_switch_steps());
  EXPECT_EQ(b.switch_step(), 6);
}

}  // namespace
}  // namespace hpt
