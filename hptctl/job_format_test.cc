#include "hptctl/job_format.h"

#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

Job RunningJob() {
  Job job;
  job.set_job_id("job-000007");
  job.set_name("demo");
  job.set_state(RUNNING);
  job.mutable_spec()->mutable_model()->set_preset("tiny");
  JobProgress* p = job.mutable_progress();
  p->set_epoch(2);
  p->set_epochs(3);
  p->set_step(50);
  p->set_total_steps(200);
  p->set_loss(0.123456);
  p->set_samples_per_s(88.04);
  p->set_eta_s(75);
  return job;
}

TEST(JobFormatTest, ProgressBarShowsFractionLossAndEta) {
  EXPECT_EQ(FormatProgress(RunningJob(), 8),
            "[##......]  25% epoch 2/3 step 50/200 loss 0.1235  88.0 "
            "samples/s  ETA 1m15s");
  Job lora = RunningJob();
  lora.mutable_hpt()->set_phase(TrainingPhase::lora);
  EXPECT_EQ(FormatProgress(lora, 8),
            "lora [##......]  25% epoch 2/3 step 50/200 loss 0.1235  88.0 samples/s  ETA 1m15s");
}

// Status gives a running job's ETA beside its elapsed time; not once its
// steps are done or it ended.
TEST(JobFormatTest, StatusGivesARunningJobsEta) {
  Job job = RunningJob();
  job.mutable_progress()->set_elapsed_s(25);
  EXPECT_NE(FormatSummary(job).find("\n  progress   epoch 2/3, step 50/200, 25s elapsed, ETA "
                                    "1m15s\n"),
            std::string::npos)
      << FormatSummary(job);
  job.set_state(CANCELLED);
  EXPECT_NE(FormatSummary(job).find("\n  progress   epoch 2/3, step 50/200, 25s elapsed\n"),
            std::string::npos)
      << FormatSummary(job);
  job.set_state(RUNNING);
  job.mutable_progress()->set_step(200);
  EXPECT_EQ(FormatSummary(job).find("ETA"), std::string::npos);
}

TEST(JobFormatTest, ProgressBeforeFirstStepHasNoLoss) {
  Job job = RunningJob();
  job.mutable_progress()->set_step(0);
  EXPECT_EQ(FormatProgress(job, 4),
            "[....]   0% epoch 2/3 step 0/200 loss -  88.0 samples/s  ETA -");
}

// After an epoch's last step the bar stands still while the test split is
// predicted: it says so where the ETA was, and the summary in a line.
TEST(JobFormatTest, AnEvaluationShowsHowFarItIs) {
  Job job = RunningJob();
  job.mutable_progress()->set_step(200);
  job.mutable_progress()->set_evaluating("the test split: 576 of 1665 samples");
  EXPECT_EQ(FormatProgress(job, 4),
            "[####] 100% epoch 2/3 step 200/200 loss 0.1235  88.0 samples/s  evaluating the "
            "test split: 576 of 1665 samples");
  EXPECT_NE(FormatSummary(job).find("\n  evaluating the test split: 576 of 1665 samples\n"),
            std::string::npos);
  job.mutable_progress()->clear_evaluating();
  EXPECT_EQ(FormatSummary(job).find("evaluating"), std::string::npos);
  // Between the last step and the evaluation's first report: no "ETA 0.0s".
  job.mutable_progress()->set_eta_s(0);
  EXPECT_EQ(FormatProgress(job, 4),
            "[####] 100% epoch 2/3 step 200/200 loss 0.1235  88.0 samples/s  training done");
}

// list: a header, each job's phase and switch step, names fitted to the
// longest (cut at 24 characters), and a full job marked as such.
TEST(JobFormatTest, ListHasAHeaderAndEachJobsPhaseAndSwitch) {
  Job lora = RunningJob();
  lora.mutable_hpt()->set_phase(TrainingPhase::lora);
  lora.mutable_hpt()->set_switch_step(30);
  Job never = RunningJob();
  never.set_job_id("job-000008");
  never.set_name("a wind run with a long descriptive name");
  never.set_state(SUCCEEDED);
  never.mutable_hpt()->set_phase(TrainingPhase::full);
  never.mutable_hpt()->set_switch_step(-1);
  Job full = RunningJob();
  full.set_job_id("job-000009");
  full.set_state(QUEUED);
  full.mutable_spec()->mutable_hpt()->set_mode(TrainingMode::full);
  full.mutable_progress()->set_step(0);
  Job refused = never;  // failed before a step: no switch to speak of
  refused.set_state(FAILED);
  refused.mutable_progress()->set_step(0);
  EXPECT_THAT(FormatList({refused}), ::testing::EndsWith(" -        -       full   -\n"));
  Job cancelled = never;  // it may be resumed and switch yet
  cancelled.set_state(CANCELLED);
  EXPECT_THAT(FormatList({cancelled}), ::testing::EndsWith(" 0.1235   -       full   -\n"));
  never.mutable_test_metrics()->set_values(100);
  never.mutable_test_metrics()->set_persistence_rmse(1.3);
  never.mutable_test_metrics()->set_skill(-0.137);
  EXPECT_EQ(
      FormatList({lora, never, full}),
      "JOB          STATE      NAME                     PRESET   EPOCH   STEP        LOSS     "
      "SKILL   PHASE  SWITCH\n"
      "job-000007   running    demo                     tiny     2/3     50/200      0.1235   "
      "-       lora   30\n"
      "job-000008   succeeded  a wind run with a long ~ tiny     2/3     50/200      0.1235   "
      "-0.137  full   never\n"
      "job-000009   queued     demo                     tiny     2/3     0/200       -        "
      "-       full*  -\n"
      "full*: hpt.mode full, no LoRA phase\n"
      "SKILL: test skill over persistence (below 0: the model loses to it)\n");
}

TEST(JobFormatTest, DurationsReadNaturally) {
  EXPECT_EQ(FormatDuration(0.34), "0.3s");
  EXPECT_EQ(FormatDuration(4.4), "4.4s");
  EXPECT_EQ(FormatDuration(9.96), "10s");
  EXPECT_EQ(FormatDuration(12.4), "12s");
  EXPECT_EQ(FormatDuration(65), "1m05s");
  EXPECT_EQ(FormatDuration(7300), "2h01m");
  EXPECT_EQ(FormatDuration(-1), "-");
}

TEST(JobFormatTest, ExitCodesAreStable) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), 0);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("x")), 3);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("x")), 4);
  EXPECT_EQ(ExitCodeFor(absl::UnavailableError("x")), 5);
  EXPECT_EQ(ExitCodeFor(absl::DeadlineExceededError("x")), 5);
  EXPECT_EQ(ExitCodeFor(absl::InternalError("x")), 6);
}

TEST(JobFormatTest, SummaryListsLossesAndError) {
  Job job = RunningJob();
  job.set_state(FAILED);
  job.add_epoch_losses(0.5);
  job.add_epoch_losses(0.25);
  job.set_error("worker 127.0.0.1:1 forward: boom");
  job.mutable_data()->set_source("weather");
  job.mutable_data()->set_rows(100);
  job.mutable_data()->set_columns(8);
  job.mutable_data()->set_skipped_rows(3);
  job.mutable_data()->set_first_time("2019-01-01 00:00");
  job.mutable_data()->set_last_time("2019-01-05 03:00");
  job.mutable_data()->set_time_step_s(3600);
  job.mutable_progress()->set_test_loss(0.25);
  job.mutable_progress()->set_validation_loss(0.3);
  job.mutable_progress()->set_selected_epoch(2);
  job.mutable_progress()->set_selected_validation_loss(0.125);
  DeviceCost& reram = *job.add_device_costs();
  reram.set_kind(DeviceKind::reram);
  reram.set_worker("127.0.0.1:2");
  reram.set_tasks(3);
  const std::string s = FormatSummary(job);
  // Each device row names its kind as a spec writes it.
  EXPECT_NE(s.find("             reram    127.0.0.1:2                 3     0.000s"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("test MSE   0.2500 (normalised units), of epoch 2: it validated best "
                   "(MSE 0.1250)\n  valid MSE  0.3000 after the last epoch"),
            std::string::npos) << s;
  EXPECT_NE(s.find("time       2019-01-01 00:00 to 2019-01-05 03:00 UTC, every 1 h\n"),
            std::string::npos) << s;
  EXPECT_NE(s.find("data       weather, 100 time steps x 8 stations, 3 rows without a "
                   "timestamp skipped"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("job job-000007 (demo): failed"), std::string::npos);
  job.mutable_data()->set_source("covid");  // its series are counties
  EXPECT_NE(FormatSummary(job).find("data       covid, 100 time steps x 8 counties"),
            std::string::npos);
  job.mutable_data()->set_skipped_rows(1);
  job.mutable_data()->set_filled_cells(1);
  EXPECT_NE(FormatSummary(job).find(", 1 row without a timestamp skipped, 1 gap interpolated\n"),
            std::string::npos)
      << FormatSummary(job);
  EXPECT_NE(s.find("epoch loss 0.5000 0.2500"), std::string::npos);
  EXPECT_NE(s.find("error      worker 127.0.0.1:1 forward: boom"), std::string::npos);
}

// status names the model's shape once the data has loaded (the spec's
// overrides resolved), and says nothing of it before.
TEST(JobFormatTest, SummaryNamesTheModelsShapeOnceKnown) {
  Job job;
  job.set_job_id("job-000003");
  job.mutable_spec()->mutable_model()->set_preset("wind");
  EXPECT_EQ(FormatSummary(job).find("shape"), std::string::npos) << FormatSummary(job);
  ModelConfig* m = job.mutable_model();
  m->set_preset("wind");
  m->set_input_features(12);
  m->set_output_features(1);
  m->set_d_model(64);
  m->set_num_layers(2);
  m->set_num_heads(8);
  m->set_ff_multiplier(2);
  m->set_reduction_dim(32);
  m->set_embedding_skip(true);
  // Embedding 12x64+64 + 64x64+64 = 4,992; a layer 4x(64x64+64) +
  // (64x128+128) + (128x64+64) + 4x64 = 33,472, two 66,944; reduction
  // 128x32+32 + 32+1 = 4,161.
  EXPECT_NE(FormatSummary(job).find("\n  shape      2 layers, d_model 64, 8 heads, FF x2, "
                                    "reduction 32, embedding skip; 76,097 parameters\n"),
            std::string::npos)
      << FormatSummary(job);
}

// status tells at a glance the phase and why it switched, the quality
// beside persistence and what HpT saved; a full job says it has no LoRA
// phase and no saving.
TEST(JobFormatTest, SummaryTellsPhaseSwitchQualityAndSaving) {
  Job job = RunningJob();
  job.set_state(SUCCEEDED);
  HptStatus& h = *job.mutable_hpt();
  h.set_phase(TrainingPhase::lora);
  h.set_switch_step(30);
  PhaseEvent& check = *h.add_events();
  check.set_kind(PhaseEvent::CHECK);
  check.set_iteration(24);
  check.set_loss_passed(true);
  check.set_weight_passed(true);
  PhaseEvent& t = *h.add_events();
  t.set_kind(PhaseEvent::TRIAL_END);
  t.set_iteration(29);
  t.set_p(0.7171);
  PhaseEvent& sw = *h.add_events();
  sw.set_kind(PhaseEvent::SWITCH);
  sw.set_iteration(29);
  sw.set_reason("no significant difference between full and LoRA losses");
  h.mutable_comparison()->set_hpt_time_s(0.357);
  h.mutable_comparison()->set_time_ratio(4.07);
  h.mutable_comparison()->set_energy_ratio(4.46);
  h.mutable_comparison()->set_baseline(GpuBaseline::paper);
  for (auto [name, seconds, ratio] :
       {std::tuple{"paper", 1.45, 4.07}, {"graph", 0.0354, 0.872}, {"fused", 0.707, 3.58}}) {
    BaselineComparison& b = *h.mutable_comparison()->add_baselines();
    b.set_baseline(name);
    b.set_gpu_only_time_s(seconds);
    b.set_time_ratio(ratio);
  }
  job.mutable_data()->set_unit("m/s");
  QualityMetrics& q = *job.mutable_test_metrics();
  q.set_values(100);
  q.set_rmse(1.491);
  q.set_mae(1.062);
  q.set_persistence_rmse(1.312);
  q.set_skill(1 - 1.491 / 1.312);
  const std::string s = FormatSummary(job);
  EXPECT_NE(s.find("\n  phase      lora since step 30\n  switched   after step 29: both tests "
                   "passed at step 24; after the LoRA trial, no significant difference between "
                   "full and LoRA losses (t-test p 0.717)\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\n  quality    test RMSE 1.491 m/s, MAE 1.062 m/s; skill -0.136 over "
                   "persistence (RMSE 1.312 m/s): it LOSES to persistence\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\n  HpT saved  4.07x time, 4.46x energy against GPU-only (paper baseline, "
                   "simulated steps; hptctl report job-000007 for each baseline)\n"
                   "             0.872x time against the fastest GPU-only (graph, modelled): "
                   "HpT is slower\n"),
            std::string::npos)
      << s;

  // Below 1x: what HpT cost, not a "saving".
  h.mutable_comparison()->set_time_ratio(0.138);
  h.mutable_comparison()->set_energy_ratio(0.788);
  EXPECT_NE(FormatSummary(job).find("\n  HpT saved  0.138x time, 0.788x energy against GPU-only "
                                    "(paper baseline, simulated steps; hptctl report job-000007 "
                                    "for each baseline)\n             below 1x: HpT took 7.25x "
                                    "the time and 1.27x the energy of GPU-only training\n"),
            std::string::npos)
      << FormatSummary(job);
  h.mutable_comparison()->set_energy_ratio(1.5);
  EXPECT_NE(FormatSummary(job).find("below 1x: HpT took 7.25x the time of GPU-only training\n"),
            std::string::npos);

  // Not switched: how far it got, and where to read why.
  h.set_phase(TrainingPhase::full);
  h.set_switch_step(-1);
  h.set_check_window_steps(5);
  job.mutable_progress()->set_total_steps(40);
  h.mutable_events()->DeleteSubrange(1, 2);
  EXPECT_NE(FormatSummary(job).find("\n  phase      full\n  switch     never switched: 1 checks "
                                    "over 8 windows of 5 steps (hptctl report job-000007 says "
                                    "why)\n"),
            std::string::npos)
      << FormatSummary(job);
  EXPECT_NE(FormatSummary(job).find("\n  HpT saved  nothing: without a switch every step trains "
                                    "as GPU-only training would\n"),
            std::string::npos)
      << FormatSummary(job);

  job.mutable_spec()->mutable_hpt()->set_mode(TrainingMode::full);
  const std::string full = FormatSummary(job);
  EXPECT_NE(full.find("\n  phase      full (hpt.mode full: every parameter, no LoRA phase)\n"),
            std::string::npos)
      << full;
  EXPECT_EQ(full.find("HpT saved"), std::string::npos) << full;
  EXPECT_EQ(full.find("switch "), std::string::npos) << full;
}

TEST(JobFormatTest, ReportShowsPhasesSwitchRatiosAndMetrics) {
  Job job = RunningJob();
  job.set_state(SUCCEEDED);
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
            std::string::npos) << r;
  EXPECT_NE(r.find("lora on the GPU workers: 10 steps in 2 runs of 5 on average (eager)\n"
                   "    launch: data-parallel over 2 workers"),
            std::string::npos) << r;
  EXPECT_NE(r.find("skill 0.219 over persistence (RMSE 1.6); climatology (station mean by hour "
                   "of day) RMSE 3.1"),
            std::string::npos) << r;
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
TEST(JobFormatTest, TheSwitchRowSpansEveryLayersSwitch) {
  Job job = RunningJob();
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

}  // namespace
}  // namespace hpt

namespace hpt {
namespace {

// The report says how the job trains: both phases' optimizers, the rates'
// provenance (the paper's recipe, scaled to the batch) and the switch rule.
TEST(JobFormatTest, ReportStatesTheRecipeAndTheSwitchRule) {
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
  t.set_learning_rate_rule("the paper's swe recipe (...): 0.0001 at batch 1; at batch 32 x sqrt(32/1)");
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

}  // namespace
}  // namespace hpt

namespace hpt {
namespace {

// A finished job without a test split says why it has no test metrics,
// where a running one (metrics to come) says nothing.
TEST(JobFormatTest, AReportWithoutATestSplitSaysWhy) {
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
