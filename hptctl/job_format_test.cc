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

}  // namespace
}  // namespace hpt
