#include "cost/text_report.h"

#include <string>

#include "gtest/gtest.h"

namespace hpt {
namespace {

// A job the coordinator has accepted; the tests add what its report reads.
Job AJob(JobState state) {
  Job job;
  job.set_job_id("job-000007");
  job.set_name("demo");
  job.set_state(state);
  return job;
}

TEST(TextReportTest, ReportShowsPhasesSwitchRatiosAndMetrics) {
  Job job = AJob(SUCCEEDED);
  HptStatus& h = *job.mutable_hpt();
  h.set_placement(Placement::paper);
  h.set_check_window_steps(15);
  h.set_check_window_samples(480);
  h.set_batch_size(32);
  h.set_switch_step(40);
  (*h.mutable_lora_ranks())["layers.0.self_attn.q_proj"] = 8;
  (*h.mutable_lora_ranks())["layers.0.self_attn.v_proj"] = 8;
  PhaseEvent& check = *h.add_events();
  check.set_kind(PhaseEvent::CHECK);
  check.set_iteration(29);
  check.set_loss_passed(true);
  check.set_weight_passed(true);
  PhaseEvent& hidden = *h.add_events();  // fails both: not listed
  hidden.set_kind(PhaseEvent::CHECK);
  hidden.set_iteration(19);
  PhaseEvent& t = *h.add_events();
  t.set_kind(PhaseEvent::TRIAL_END);
  t.set_iteration(39);
  t.set_t(0.5);
  t.set_dof(18);
  t.set_p(0.62);
  PhaseCost& full = *h.add_phases();
  full.set_phase(CostPhase::full);
  full.set_first_step(0);
  full.set_last_step(39);
  full.set_simulated_s(0.002);
  full.set_energy_j(1.5);
  (*full.mutable_device_energy_j())["gpu"] = 1.5;
  (*full.mutable_device_busy_s())["gpu"] = 0.002;
  h.mutable_comparison()->set_hpt_time_s(0.003);
  h.mutable_comparison()->set_gpu_only_time_s(0.006);
  h.mutable_comparison()->set_time_ratio(2.0);
  h.mutable_comparison()->set_energy_ratio(3.5);
  h.mutable_comparison()->set_project_epochs(24);
  h.mutable_comparison()->set_project_steps(4704);
  h.mutable_comparison()->set_projected_time_ratio(6.25);
  h.mutable_comparison()->set_projected_energy_ratio(7.5);
  h.mutable_comparison()->set_projection_method("24 epochs x 196 steps");
  h.mutable_comparison()->add_time_notes("GPU: 14000 kernels");
  job.mutable_test_metrics()->set_values(100);
  job.mutable_test_metrics()->set_rmse(1.25);
  job.mutable_test_metrics()->set_nse(0.9);
  job.mutable_test_metrics()->set_persistence_rmse(1.6);
  job.mutable_test_metrics()->set_skill(1 - 1.25 / 1.6);
  job.mutable_test_metrics()->set_climatology_rmse(3.1);
  job.mutable_test_metrics()->set_climatology("station mean by hour of day");
  DeviceCost& gpu = *job.add_device_costs();
  gpu.set_kind(DeviceKind::gpu);
  gpu.mutable_cost()->set_simulated_s(0.004);
  (*gpu.mutable_cost()->mutable_counters())["kernels"] = 40 * 350;
  (*gpu.mutable_cost()->mutable_counters())["launch_bound_s"] = 0.003;
  ReramLayerPlacement& q = *h.add_reram_layers();
  q.set_layer("layers.0.self_attn.q_proj");
  q.set_in_features(512);
  q.set_out_features(512);
  q.set_duplication(3);
  q.set_tiles(12);
  PhaseDispatch& runs = *h.add_dispatch();
  runs.set_phase(TrainingPhase::full);
  runs.set_runs(4);
  runs.set_run_steps(40);
  runs.set_launch(Launch::graph);
  PhaseDispatch& eager = *h.add_dispatch();
  eager.set_phase(TrainingPhase::lora);
  eager.set_runs(2);
  eager.set_run_steps(10);
  eager.set_launch(Launch::eager);
  eager.set_launch_note("data-parallel over 2 workers");
  const std::string r = FormatReport(job);
  EXPECT_NE(r.find("full on the GPU workers: 40 steps in 4 runs of 10 on average (graph)"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("lora on the GPU workers: 10 steps in 2 runs of 5 on average (eager)\n"
                   "    launch: data-parallel over 2 workers"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("skill 0.219 over persistence (RMSE 1.6); climatology (station mean by hour "
                   "of day) RMSE 3.1"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("GPU kernels: 350 a full-phase step"), std::string::npos) << r;
  EXPECT_NE(r.find("75 % of simulated GPU time launch-bound"), std::string::npos) << r;
  EXPECT_NE(r.find("(12 tiles used"), std::string::npos) << r;
  EXPECT_NE(r.find("1 x 512x512  3 copies  e.g. layers.0.self_attn.q_proj"), std::string::npos)
      << r;
  EXPECT_NE(r.find("window k 480 samples = 15 steps at batch 32"), std::string::npos) << r;
  EXPECT_NE(r.find("switched to LoRA at step 40"), std::string::npos) << r;
  EXPECT_EQ(r.find("  switched after"), std::string::npos) << "no SWITCH event, no why: " << r;
  EXPECT_NE(r.find("2x r8"), std::string::npos) << r;
  EXPECT_NE(r.find("full    0-39"), std::string::npos) << r;
  EXPECT_NE(r.find("2 ms"), std::string::npos) << r;
  EXPECT_NE(r.find("gpu 2 ms/1.5 J"), std::string::npos) << r;
  EXPECT_NE(r.find("2.00x"), std::string::npos) << r;
  EXPECT_NE(r.find("projected to 24 epoch(s) (4704 steps)"), std::string::npos) << r;
  EXPECT_NE(r.find("6.25x"), std::string::npos) << r;
  EXPECT_NE(r.find("7.50x"), std::string::npos) << r;
  EXPECT_NE(r.find("where the simulated time goes\n  GPU: 14000 kernels"), std::string::npos) << r;
  EXPECT_NE(r.find("3.50x"), std::string::npos) << r;
  EXPECT_NE(r.find("RMSE 1.25"), std::string::npos) << r;
  EXPECT_NE(r.find("p 0.62  no difference: switch"), std::string::npos) << r;
  EXPECT_NE(r.find("check   step 29"), std::string::npos) << r;
  EXPECT_EQ(r.find("check   step 19"), std::string::npos) << r;
}

// The switch row names the step its programming followed; under layerwise
// the layers switch after different steps, and the row spans them.
TEST(TextReportTest, TheSwitchRowSpansEveryLayersSwitch) {
  Job job = AJob(RUNNING);
  HptStatus& h = *job.mutable_hpt();
  PhaseCost& once = *h.add_phases();
  once.set_phase(CostPhase::switch_);
  once.set_first_step(39);
  once.set_last_step(39);
  once.set_energy_j(0.5);
  EXPECT_NE(FormatReport(job).find("switch  after 39 "), std::string::npos) << FormatReport(job);
  once.set_first_step(29);
  once.set_last_step(59);
  h.add_layer_switch_steps(30);
  h.add_layer_switch_steps(60);
  const std::string r = FormatReport(job);
  EXPECT_NE(r.find("switch  after 29-59 "), std::string::npos) << r;
  EXPECT_EQ(r.find("after 59 "), std::string::npos) << r;
}

// The report says how the job trains: both phases' optimizers, the rates'
// provenance (the paper's recipe, scaled to the batch) and the switch rule.
TEST(TextReportTest, ReportStatesTheRecipeAndTheSwitchRule) {
  Job job;
  job.set_job_id("7");
  TrainingSpec& t = *job.mutable_spec()->mutable_training();
  t.set_batch_size(32);
  t.set_epochs(10);
  t.mutable_optimizer()->set_type(ADAMW);
  t.mutable_optimizer()->set_learning_rate(5.66e-4);
  t.mutable_optimizer()->set_weight_decay(1e-4);
  t.set_step_lr_step_size(3);
  t.set_step_lr_gamma(0.6);
  t.set_learning_rate_rule(
      "the paper's swe recipe (...): 0.0001 at batch 1; at batch 32 x sqrt(32/1)");
  HptSpec& h = *job.mutable_spec()->mutable_hpt();
  h.mutable_lora_optimizer()->set_type(ADAMW);
  h.mutable_lora_optimizer()->set_learning_rate(5.66e-4);
  h.set_lora_learning_rate_rule("the paper's swe recipe (model/swe/main.py:455)");
  h.set_switch_rule(SwitchRule::consecutive);
  h.set_consecutive_checks(3);
  h.set_alpha(0.01);
  const std::string r = FormatReport(job);
  EXPECT_NE(r.find("training: batch 32, 10 epochs, AdamW lr 0.000566 wd 0.0001, StepLR x0.6 "
                   "every 3 epochs\n  rate: the paper's swe recipe"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("LoRA phase: AdamW lr 0.000566, constant\n  rate: the paper's swe recipe "
                   "(model/swe/main.py:455)"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("switch rule: consecutive (3 passing checks in a row); trial: the paper's "
                   "two-sided t-test (alpha 0.01)"),
            std::string::npos)
      << r;
  h.set_switch_rule(SwitchRule::plateau);
  h.set_plateau_z(1.645);
  h.set_trial_test(TrialTest::none);
  EXPECT_NE(FormatReport(job).find("switch rule: plateau (a window's mean loss not 1.645 "
                                   "standard errors below the one before); no trial: a passing "
                                   "check switches"),
            std::string::npos);
  h.set_trial_test(TrialTest::margin);
  h.set_trial_margin(0.05);
  EXPECT_NE(FormatReport(job).find("; trial: LoRA's loss shown within 5 % of the full model's "
                                   "(one-sided 99 % bound)"),
            std::string::npos);
}

// A finished job without a test split says why it has no test metrics,
// where a running one (metrics to come) says nothing.
TEST(TextReportTest, AReportWithoutATestSplitSaysWhy) {
  Job job;
  job.set_job_id("job-000009");
  job.set_state(SUCCEEDED);
  job.mutable_data()->set_split("training rows given and no test rows, so no test split");
  EXPECT_NE(FormatReport(job).find("\nno test metrics: the job's data has no test split "
                                   "(training rows given and no test rows, so no test split)\n"),
            std::string::npos)
      << FormatReport(job);
  job.set_state(RUNNING);
  EXPECT_EQ(FormatReport(job).find("no test metrics"), std::string::npos);
}

}  // namespace
}  // namespace hpt
