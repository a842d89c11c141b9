#include "coordinator/training/switch_policy.h"

#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(SamplingPolicyTest, RestartsTheTrialAtEachWindowEndFromTheThirdAndKeepsEveryStep) {
  SamplingPolicy policy(/*check_window_steps=*/4);
  EXPECT_EQ(policy.AtResume(8), SwitchPolicy::Decision::kContinue);
  std::vector<int64_t> restarts;
  for (int64_t step = 0; step < 20; ++step) {
    const SwitchPolicy::Decision d = policy.AfterStep({step, 1.0, 0.5, 0.1});
    ASSERT_NE(d, SwitchPolicy::Decision::kSwitch) << step;
    if (d == SwitchPolicy::Decision::kRestartTrial) restarts.push_back(step);
  }
  // Windows end after steps 3, 7, 11, 15, 19; the third closes at step 11.
  EXPECT_EQ(restarts, (std::vector<int64_t>{11, 15, 19}));
  ASSERT_EQ(policy.samples().size(), 20u);
  EXPECT_EQ(policy.samples()[7].step, 7);
  EXPECT_DOUBLE_EQ(policy.samples()[7].trial_loss, 0.5);
}

TEST(SwitchAtResumePolicyTest, SwitchesAtTheResumeOnly) {
  SwitchAtResumePolicy policy;
  EXPECT_EQ(policy.AtResume(40), SwitchPolicy::Decision::kSwitch);
  EXPECT_EQ(policy.AfterStep({40, 1.0, 0, 0}), SwitchPolicy::Decision::kContinue);
}

}  // namespace
}  // namespace hpt
