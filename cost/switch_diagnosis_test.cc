#include "cost/switch_diagnosis.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

PhaseEvent Check(int64_t step, bool loss, double loss_margin, bool weights, double weight_margin,
                 const std::string& loss_detail, const std::string& weight_detail = "") {
  PhaseEvent e;
  e.set_kind(PhaseEvent::CHECK);
  e.set_iteration(step);
  e.set_loss_passed(loss);
  e.set_loss_margin(loss_margin);
  e.set_weight_passed(weights);
  e.set_weight_margin(weight_margin);
  e.set_loss_detail(loss_detail);
  e.set_weight_detail(weight_detail);
  return e;
}

Job NeverSwitched() {
  Job job;
  job.set_state(SUCCEEDED);
  job.mutable_progress()->set_total_steps(1000);
  HptStatus& h = *job.mutable_hpt();
  h.set_switch_step(-1);
  h.set_check_window_steps(100);
  *h.add_events() = Check(299, false, 1.8, false, 3.0, "loss: first drop 18 % (bound 10 %)",
                          "weights: first drop 3 % (bound 1 %)");
  *h.add_events() = Check(399, false, 1.04, false, 2.5, "loss: second drop 10.4 % (bound 10 %)",
                          "weights: first drop 2.5 % (bound 1 %)");
  *h.add_events() = Check(499, true, 0.7, false, 1.2, "loss: first drop 7 % (bound 10 %)",
                          "weights: first drop 1.2 % (bound 1 %)");
  return job;
}

// A test that never passed says where it came closest and by how much; one
// that passed says at which checks (the first six, then how many more).
TEST(SwitchDiagnosisTest, SaysHowOftenEachTestFailedAndWhereItCameClosest) {
  const std::vector<std::string> lines = ClosestApproach(NeverSwitched());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "never switched: 3 checks over 10 windows of 100 steps");
  EXPECT_EQ(lines[1], "  loss test   failed 2 of 3 checks; passed at step 499");
  EXPECT_EQ(lines[2],
            "  weight test failed 3 of 3 checks; closest at step 499: 1.2 of its bound "
            "(weights: first drop 1.2 % (bound 1 %))");
  EXPECT_EQ(lines[3], "  both passed at 0 checks; 0 trials, 0 of them with LoRA's loss "
                      "significantly different");
}

// A check whose tests passed on a rising loss began no trial: the line
// counts it among those where both passed, and says so.
TEST(SwitchDiagnosisTest, ChecksOnARisingLossAreCountedAsBeginningNoTrial) {
  Job job = NeverSwitched();
  PhaseEvent rising = Check(599, true, 0.5, true, 0.4, "loss: ...", "weights: ...");
  rising.set_loss_rising(true);
  rising.set_reason("any words: the flag decides");
  *job.mutable_hpt()->add_events() = rising;
  *job.mutable_hpt()->add_events() = Check(699, true, 0.5, true, 0.4, "loss: ...", "weights: ...");
  const std::vector<std::string> lines = ClosestApproach(job);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3],
            "  both passed at 2 checks (1 of them on a rising loss, no trial); 0 "
            "trials, 0 of them with LoRA's loss significantly different");
}

TEST(SwitchDiagnosisTest, ATestThatPassedOftenNamesItsFirstSixChecks) {
  Job job = NeverSwitched();
  for (int64_t step = 599; step <= 1299; step += 100) {
    *job.mutable_hpt()->add_events() =
        Check(step, true, 0.5, false, 2.0, "loss: ...", "weights: ...");
  }
  const std::vector<std::string> lines = ClosestApproach(job);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1],
            "  loss test   failed 2 of 11 checks; passed at steps 499, 599, 699, 799, "
            "899, 999 and 3 more");
  EXPECT_EQ(lines[2],
            "  weight test failed 11 of 11 checks; closest at step 499: 1.2 of its "
            "bound (weights: first drop 1.2 % (bound 1 %))");
}

TEST(SwitchDiagnosisTest, LossOnlyRulesShowNoWeightLineAndRunningJobsSayYet) {
  Job job = NeverSwitched();
  job.set_state(RUNNING);
  HptStatus& h = *job.mutable_hpt();
  h.clear_events();
  *h.add_events() = Check(299, false, 2.0, true, 0, "plateau: ...");
  const std::vector<std::string> lines = ClosestApproach(job);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "no switch yet: 1 checks over 10 windows of 100 steps");
  job.set_state(CANCELLED);  // it may be resumed
  EXPECT_EQ(ClosestApproach(job)[0],
            "no switch before it stopped: 1 checks over 10 windows of 100 steps");
  EXPECT_NE(lines[1].find("loss test   failed 1 of 1"), std::string::npos);
}

TEST(SwitchDiagnosisTest, CountsTrialsAndWhichWayLoraDiffered) {
  Job job = NeverSwitched();
  HptStatus& h = *job.mutable_hpt();
  for (double lora : {0.4, 0.6, 0.45}) {
    PhaseEvent& t = *h.add_events();
    t.set_kind(PhaseEvent::TRIAL_END);
    t.set_mean_full(0.5);
    t.set_mean_lora(lora);
    t.set_significant(lora != 0.45);
  }
  const std::vector<std::string> lines = ClosestApproach(job);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3], "  both passed at 0 checks; 3 trials, 2 of them with LoRA's loss "
                      "significantly different (1 lower)");
}

// A trial begun at the last check may still run when the run ends: the
// count of ended trials is then not the whole story.
TEST(SwitchDiagnosisTest, ATrialStillRunningAtTheEndIsSaid) {
  Job job = NeverSwitched();
  PhaseEvent& start = *job.mutable_hpt()->add_events();
  start.set_kind(PhaseEvent::TRIAL_START);
  start.set_iteration(5999);
  std::vector<std::string> lines = ClosestApproach(job);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[3],
            "  both passed at 0 checks; 0 trials, 0 of them with LoRA's loss "
            "significantly different");
  EXPECT_EQ(lines[4],
            "  the trial begun at step 5999 had not ended when the run did (more epochs let it "
            "end)");
  job.set_state(RUNNING);
  lines = ClosestApproach(job);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[4], "  a trial is running since step 5999");
  PhaseEvent& end = *job.mutable_hpt()->add_events();
  end.set_kind(PhaseEvent::TRIAL_END);
  EXPECT_EQ(ClosestApproach(job).size(), 4u);
}

TEST(SwitchDiagnosisTest, MarginTrialsSayTheClosestBound) {
  Job job = NeverSwitched();
  HptStatus& h = *job.mutable_hpt();
  for (auto [step, margin] : {std::pair<int64_t, double>{599, 2.4}, {699, 1.3}, {799, 1.7}}) {
    PhaseEvent& t = *h.add_events();
    t.set_kind(PhaseEvent::TRIAL_END);
    t.set_iteration(step);
    t.set_mean_full(0.5);
    t.set_mean_lora(0.55);
    t.set_significant(true);
    t.set_trial_margin(margin);
    t.set_trial_detail(absl::StrCat("margin: step ", step));
  }
  const std::vector<std::string> lines = ClosestApproach(job);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[3], "  both passed at 0 checks; 3 trials, 3 of them with LoRA's loss not "
                      "shown within the margin");
  EXPECT_EQ(lines[4], "  closest trial at step 699: 1.3 of its bound (margin: step 699)");
}

TEST(SwitchDiagnosisTest, NoCheckAndSwitchedJobs) {
  Job job = NeverSwitched();
  job.mutable_hpt()->clear_events();
  job.mutable_progress()->set_total_steps(250);
  const std::vector<std::string> lines = ClosestApproach(job);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "never switched: no check ran; the run has 2 windows of 100 steps and the "
            "first check closes the third (a shorter hpt.check_window_samples, or "
            "more epochs, gives checks)");
  job.mutable_progress()->set_total_steps(63);
  EXPECT_EQ(ClosestApproach(job)[0],
            "never switched: no check ran; the run's 63 steps do not fill one window of 100 "
            "steps, and the first check closes the third (a shorter hpt.check_window_samples, "
            "or more epochs, gives checks)");
  job.set_state(RUNNING);
  job.mutable_progress()->set_total_steps(1000);
  EXPECT_EQ(ClosestApproach(job)[0],
            "no switch yet: the first check closes the third window of 100 steps, at step 300");
  // Under the trend rule (5 windows) the first check is the fifth window's.
  job.mutable_spec()->mutable_hpt()->set_switch_rule(SwitchRule::trend);
  job.mutable_spec()->mutable_hpt()->set_trend_windows(5);
  EXPECT_EQ(ClosestApproach(job)[0],
            "no switch yet: the first check closes the fifth window of 100 steps, at step 500");
  job.mutable_progress()->set_total_steps(450);
  EXPECT_EQ(ClosestApproach(job)[0],
            "no switch yet: no check ran; the run has 4 windows of 100 steps and the first check "
            "closes the fifth (a shorter hpt.check_window_samples, or more epochs, gives checks)");
  job.mutable_spec()->mutable_hpt()->clear_switch_rule();
  job.mutable_spec()->mutable_hpt()->clear_trend_windows();
  job.mutable_progress()->set_total_steps(250);
  job.set_state(SUCCEEDED);
  job.mutable_hpt()->set_switch_step(120);
  EXPECT_TRUE(ClosestApproach(job).empty());
  Job full = NeverSwitched();
  full.mutable_spec()->mutable_hpt()->set_mode(TrainingMode::full);
  EXPECT_TRUE(ClosestApproach(full).empty());
}

// A job that trained and never switched saved nothing; "yet" while a
// switch may still come: running, or failed or cancelled (a resume goes on).
TEST(SwitchDiagnosisTest, NothingSavedSaysYetUnlessTheJobSucceeded) {
  Job job = NeverSwitched();
  EXPECT_FALSE(TrainedWithoutSwitch(job)) << "no step trained";
  job.mutable_progress()->set_step(500);
  EXPECT_TRUE(TrainedWithoutSwitch(job));
  EXPECT_EQ(NothingSavedWhy(job),
            ": without a switch every step trains as GPU-only training would");
  for (JobState state : {RUNNING, FAILED, CANCELLED}) {
    job.set_state(state);
    EXPECT_EQ(NothingSavedWhy(job),
              " yet: without a switch every step trains as GPU-only training would")
        << JobState_Name(state);
  }
  job.mutable_hpt()->add_layer_switch_steps(120);
  EXPECT_FALSE(TrainedWithoutSwitch(job)) << "a layer switched on its own";
}

// A job that switched: the check that started the trials, how many trial
// windows it took, and the verdict, with the t-test's p or the margin test.
TEST(SwitchDiagnosisTest, SwitchWhyNamesTheCheckTheTrialsAndTheVerdict) {
  Job job;
  HptStatus& h = *job.mutable_hpt();
  h.set_switch_step(-1);
  EXPECT_EQ(SwitchWhy(job), "");
  *h.add_events() = Check(19, false, 1.3, true, 0.2, "loss: ...", "weights: ...");
  *h.add_events() = Check(24, true, 0.4, true, 0.3, "loss: ...", "weights: ...");
  auto trial_end = [&](int64_t step, double p, bool significant) {
    PhaseEvent& t = *h.add_events();
    t.set_kind(PhaseEvent::TRIAL_END);
    t.set_iteration(step);
    t.set_p(p);
    t.set_significant(significant);
    return &t;
  };
  trial_end(29, 0.004, true);
  trial_end(34, 0.7171, false);
  PhaseEvent& sw = *h.add_events();
  sw.set_kind(PhaseEvent::SWITCH);
  sw.set_iteration(34);
  sw.set_reason("no significant difference between full and LoRA losses");
  h.set_switch_step(35);
  EXPECT_EQ(SwitchWhy(job),
            "after step 34: both tests passed at step 24; after 2 LoRA trial windows, no "
            "significant difference between full and LoRA losses (t-test p 0.717)");

  // The margin test: its words instead of a p.
  h.mutable_events()->DeleteSubrange(2, 1);
  PhaseEvent* last = &h.mutable_events()->at(2);
  last->set_trial_detail("LoRA 0.3 % above full (margin 5 %)");
  EXPECT_EQ(SwitchWhy(job),
            "after step 34: both tests passed at step 24; after the LoRA trial, no "
            "significant difference between full and LoRA losses (LoRA 0.3 % "
            "above full (margin 5 %))");

  // No trial: the check decides.
  h.clear_events();
  *h.add_events() = Check(24, true, 0.4, true, 0.3, "loss: ...", "weights: ...");
  PhaseEvent& now = *h.add_events();
  now.set_kind(PhaseEvent::SWITCH);
  now.set_iteration(24);
  now.set_reason("hpt.trial_test none: the check decides");
  EXPECT_EQ(SwitchWhy(job),
            "after step 24: both tests passed at step 24; hpt.trial_test none: the check decides");
}

}  // namespace
}  // namespace hpt
