// What the switch frontier (benchmarks/switch_frontier) rests on, with
// real worker executors in this process: a full-parameter run that trains
// a fresh trial copy over every window (SamplingPolicy)
// gives inputs from which PhaseController's ReplaySwitch finds the switch
// step a real HpT job with that rule takes; and that run's checkpoint at
// that step, resumed with a forced switch, ends with the real job's
// parameters and test RMSE. One CPU path; no GPU is involved.
#include <cmath>
#include <map>
#include <memory>

#include "coordinator/spec/job_spec.h"
#include "coordinator/training/phase_controller.h"
#include "coordinator/training/trainer.h"
#include "gtest/gtest.h"
#include "inprocess/in_process_workers.h"

namespace hpt {
namespace {

class SwitchReplayTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    data_ = SmallSyntheticWindows(6);
    spec_.mutable_model()->set_preset("tiny");
    spec_.mutable_model()->set_dropout(0.1);  // masks must replay too
    spec_.mutable_model()->set_dropout_set(true);
    spec_.mutable_training()->set_epochs(8);
    spec_.mutable_training()->set_batch_size(16);
    spec_.mutable_training()->mutable_optimizer()->set_learning_rate(0.003);
    HptSpec& h = *spec_.mutable_hpt();
    h.set_check_window_steps(4);
    h.set_loss_threshold(0.9);
    h.set_weight_threshold(0.9);
    h.set_placement(Placement::gpu);
    ASSERT_TRUE(SetRuleName(GetParam(), h).ok()) << GetParam();
    h.set_trend_gain(0.5);  // the trend rule's bound, loose enough to switch in 8 epochs
    h.set_trial_margin(0.5);  // and the margin test's
    h.mutable_lora()->set_rank(2);
    spec_ = *NormalizeJobSpec(spec_);
  }

  TrainerOutcome Run(Trainer::Options options) {
    InProcessWorkers workers;
    Trainer::Options o = workers.Options();
    o.switch_policy = options.switch_policy;
    o.checkpoint_every = options.checkpoint_every;
    o.on_checkpoint = std::move(options.on_checkpoint);
    o.resume = std::move(options.resume);
    TrainerOutcome out;
    o.on_progress = [&](const TrainerUpdate& u) { out.last = u; };
    Trainer trainer("job-000001", spec_, data_.get(), workers.gpus(), o);
    out.status = trainer.Run();
    if (out.status.ok()) out.model = trainer.trained_model();
    return out;
  }

  std::unique_ptr<WindowDataset> data_;
  JobSpec spec_;
};

TEST_P(SwitchReplayTest, ReplayFindsTheRealSwitchAndTheForcedSwitchEndsTheSame) {
  const TrainerOutcome real = Run({});
  ASSERT_TRUE(real.status.ok()) << real.status;
  const int64_t switch_step = real.last.hpt.switch_step();
  const int64_t total = real.last.progress.total_steps();
  ASSERT_GT(switch_step, 0) << "the rule must switch for this test to mean anything";
  ASSERT_LT(switch_step, total);

  std::map<int64_t, std::shared_ptr<const Checkpoint>> checkpoints;
  SamplingPolicy policy(spec_.hpt().check_window_steps());
  Trainer::Options sampling;
  sampling.switch_policy = &policy;
  sampling.checkpoint_every = spec_.hpt().check_window_steps();
  sampling.on_checkpoint = [&](Checkpoint c) {
    const int64_t at = c.header.step();
    checkpoints[at] = std::make_shared<const Checkpoint>(std::move(c));
  };
  const TrainerOutcome full = Run(std::move(sampling));
  ASSERT_TRUE(full.status.ok()) << full.status;
  EXPECT_EQ(full.last.hpt.switch_step(), -1);  // sampling never switches
  const std::vector<ControllerSample>& samples = policy.samples();
  ASSERT_EQ(int64_t(samples.size()), total);
  EXPECT_EQ(samples.back().step, total - 1);

  std::vector<ControllerEvent> events;
  EXPECT_EQ(ReplaySwitch(PhaseControllerOptionsOf(spec_.hpt(), total), samples, &events),
            switch_step);
  // The replay's events are the real job's, check for check.
  ASSERT_EQ(int(events.size()), real.last.hpt.events_size());
  for (size_t i = 0; i < events.size(); ++i) {
    const PhaseEvent& e = real.last.hpt.events(int(i));
    EXPECT_EQ(events[i].step, e.iteration()) << i;
    EXPECT_EQ(events[i].reason, e.reason()) << i;
    if (events[i].kind == ControllerEvent::Kind::kTrialEnd) {
      EXPECT_DOUBLE_EQ(events[i].t_test.p_value, e.p()) << i;
      EXPECT_DOUBLE_EQ(events[i].trial_margin, e.trial_margin()) << i;
    }
  }

  ASSERT_EQ(checkpoints.count(switch_step), 1u);
  SwitchAtResumePolicy at_resume;
  Trainer::Options forced;
  forced.resume = checkpoints.at(switch_step);
  forced.switch_policy = &at_resume;
  const TrainerOutcome resumed = Run(std::move(forced));
  ASSERT_TRUE(resumed.status.ok()) << resumed.status;
  EXPECT_EQ(resumed.last.hpt.switch_step(), switch_step);
  EXPECT_EQ(resumed.last.hpt.phase(), TrainingPhase::lora);
  EXPECT_DOUBLE_EQ(resumed.last.test_metrics.rmse(), real.last.test_metrics.rmse());
  ASSERT_EQ(resumed.model.parameters.size(), real.model.parameters.size());
  for (const auto& [name, t] : real.model.parameters) {
    const HostTensor& other = resumed.model.parameters.at(name);
    ASSERT_EQ(other.data.size(), t.data.size()) << name;
    for (size_t i = 0; i < t.data.size(); ++i) {
      ASSERT_EQ(other.data[i], t.data[i]) << name << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, SwitchReplayTest,
                         ::testing::Values("paper", "trend", "plateau", "plateau+margin",
                                           "plateau+none"));

}  // namespace
}  // namespace hpt
