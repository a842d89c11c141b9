#include "coordinator/training/step_history.h"

#include <cmath>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(StepHistoryTest, DownsamplesToBucketsWithMeanLeastAndLargest) {
  StepHistory history;
  for (int s = 0; s < 10; ++s) history.AddStep(s, s == 4 ? 100.0 : 1.0 + s);
  const JobHistory view = history.View(4);  // buckets of ceil(10 / 4) = 3 steps
  EXPECT_EQ(view.steps(), 10);
  EXPECT_EQ(view.bucket(), 3);
  ASSERT_EQ(view.first_step_size(), 4);
  EXPECT_EQ(view.first_step(3), 9);
  EXPECT_FLOAT_EQ(view.loss_mean(0), 2.0f);  // steps 0-2: 1, 2, 3
  // The spike at step 4 survives as the second bucket's largest value.
  EXPECT_FLOAT_EQ(view.loss_max(1), 100.0f);
  EXPECT_FLOAT_EQ(view.loss_min(1), 4.0f);
  EXPECT_FLOAT_EQ(view.loss_mean(1), (4.0f + 100.0f + 6.0f) / 3);
  EXPECT_FLOAT_EQ(view.loss_mean(3), 10.0f);
  EXPECT_EQ(history.View(0).bucket(), 1);  // 0: up to 1000 points
}

TEST(StepHistoryTest, AReplayReplacesTheStepsAfterIt) {
  StepHistory history;
  for (int s = 0; s < 6; ++s) history.AddStep(s, 1.0);
  EpochPoint e;
  e.set_epoch(2);
  e.set_last_step(5);
  history.AddEpoch(e);
  history.AddStep(3, 7.0);  // back to step 3 after a recovery
  EXPECT_EQ(history.steps(), 4);
  EXPECT_EQ(history.ToProto().step_losses(3), 7.0f);
  EXPECT_EQ(history.ToProto().epochs_size(), 0);  // epoch 2 ended at step 5
  EXPECT_FALSE(history.LastEpoch().has_value());
}

TEST(StepHistoryTest, LastEpochIsTheNewestPoint) {
  StepHistory history;
  EXPECT_FALSE(history.LastEpoch().has_value());
  EpochPoint e;
  e.set_epoch(1);
  e.set_test_loss(0.5);
  history.AddEpoch(e);
  e.set_epoch(2);
  e.set_test_loss(0);  // not scored
  history.AddEpoch(e);
  ASSERT_TRUE(history.LastEpoch().has_value());
  EXPECT_EQ(history.LastEpoch()->epoch(), 2);
  EXPECT_EQ(history.LastEpoch()->test_loss(), 0);
}

TEST(StepHistoryTest, ACheckpointKeepsItsOwnSteps) {
  StepHistory history;
  for (int s = 0; s < 8; ++s) history.AddStep(s, s);
  EpochPoint e;
  e.set_epoch(1);
  e.set_last_step(3);
  history.AddEpoch(e);
  e.set_epoch(2);
  e.set_last_step(7);
  history.AddEpoch(e);
  std::shared_ptr<StepHistory> restored = StepHistory::FromProto(history.ToProto(), 5);
  EXPECT_EQ(restored->steps(), 5);
  EXPECT_EQ(restored->ToProto().epochs_size(), 1);
  // A step beyond a gap leaves NaN between, which the view skips.
  restored->AddStep(7, 2.0);
  const JobHistory view = restored->View(1000);
  EXPECT_EQ(view.steps(), 8);
  EXPECT_EQ(view.first_step_size(), 6);
  EXPECT_TRUE(std::isnan(restored->ToProto().step_losses(5)));
}

}  // namespace
}  // namespace hpt
