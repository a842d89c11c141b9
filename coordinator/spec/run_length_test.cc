#include "coordinator/spec/run_length.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

JobSpec Spec(int64_t batch, int32_t epochs, int64_t window_steps) {
  JobSpec spec;
  spec.mutable_training()->set_batch_size(batch);
  spec.mutable_training()->set_epochs(epochs);
  spec.mutable_placement()->set_gpu_workers(1);
  spec.mutable_hpt()->set_mode(TrainingMode::hpt);
  spec.mutable_hpt()->set_check_window_steps(window_steps);
  return spec;
}

TEST(RunLengthTest, AnEpochIsWholeBatchesLessOneTooSmallToShard) {
  EXPECT_EQ(StepsPerEpoch(Spec(1, 1, 3), 6322), 6322);
  EXPECT_EQ(StepsPerEpoch(Spec(16, 1, 3), 6322), 396);  // the last batch holds 2
  JobSpec wide = Spec(16, 1, 3);
  wide.mutable_placement()->set_gpu_workers(4);
  EXPECT_EQ(StepsPerEpoch(wide, 6322), 395) << "2 samples cannot feed 4 workers";
  wide.mutable_training()->set_max_steps_per_epoch(100);
  EXPECT_EQ(StepsPerEpoch(wide, 6322), 100);
  EXPECT_EQ(StepsPerEpoch(wide, 0), 0);
}

// The weather recipe at one epoch: 6,322 steps at batch 1, the first check
// at step 24,000: the note says so and asks for 4 epochs.
TEST(RunLengthTest, ARunEndingBeforeTheFirstCheckIsToldSo) {
  EXPECT_EQ(NoCheckNote(Spec(1, 1, 8000), 6322),
            "hpt: the run's 6322 steps (1 epoch of 6322) end before the phase controller's "
            "first check, at step 24000 (the third window of 8000), so it trains every "
            "parameter throughout and HpT saves nothing; give --epochs=4 or more, or a "
            "shorter hpt.check_window_samples");
  EXPECT_EQ(NoCheckNote(Spec(1, 4, 8000), 6322), "") << "25,288 steps reach step 24,000";
  EXPECT_EQ(NoCheckNote(Spec(1, 3, 8000), 6322).substr(0, 37),
            "hpt: the run's 18966 steps (3 epochs ");
  // Under the trend rule the first check closes its own window count.
  JobSpec trend = Spec(1, 4, 8000);
  trend.mutable_hpt()->set_switch_rule(SwitchRule::trend);
  trend.mutable_hpt()->set_trend_windows(5);
  EXPECT_EQ(NoCheckNote(trend, 6322),
            "hpt: the run's 25288 steps (4 epochs of 6322) end before the phase controller's "
            "first check, at step 40000 (the fifth window of 8000), so it trains every "
            "parameter throughout and HpT saves nothing; give --epochs=7 or more, or a "
            "shorter hpt.check_window_samples");
  JobSpec full = Spec(1, 1, 8000);
  full.mutable_hpt()->set_mode(TrainingMode::full);
  EXPECT_EQ(NoCheckNote(full, 6322), "") << "a full-parameter job has no switch to miss";
}

}  // namespace
}  // namespace hpt
