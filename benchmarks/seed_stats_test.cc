#include "benchmarks/seed_stats.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(SeedStats, SwitchesMedianRangeAndMisses) {
  SwitchStats s = SummarizeSwitches({795, -1, 600, 1200, 700});
  EXPECT_EQ(s.seeds, 5);
  EXPECT_EQ(s.not_switched, 1);
  EXPECT_DOUBLE_EQ(s.median, 747.5);  // of 600, 700, 795, 1200
  EXPECT_EQ(s.min, 600);
  EXPECT_EQ(s.max, 1200);
  EXPECT_EQ(FormatSwitches(s), "median 747.5, range 600-1200, 1 of 5 no switch");
  EXPECT_EQ(FormatSwitches(SummarizeSwitches({-1, -1})), "none in 2 seeds");
  EXPECT_DOUBLE_EQ(SummarizeSwitches({3, 1, 2}).median, 2);
}

TEST(SeedStats, MeanAndSampleSd) {
  const Spread s = Summarize({1.0, 2.0, 3.0, 4.0});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.sd, 1.2909944487, 1e-9);  // sqrt(5/3)
  EXPECT_EQ(s.min, 1.0);
  EXPECT_EQ(s.max, 4.0);
}

TEST(SeedStats, PairedTestAgainstScipy) {
  // Differences 0.02, 0.04, 0.01, 0.03, 0.02: mean 0.024, sd 0.0114018,
  // t = 4.7067872, df 4; one-sided p from the t(4) CDF's closed form
  // 1/2 - (3x - x^3)/4 with x = t / sqrt(4 + t^2): 0.0046308484.
  const std::vector<double> a = {1.02, 1.05, 0.99, 1.04, 1.03};
  const std::vector<double> b = {1.00, 1.01, 0.98, 1.01, 1.01};
  const PairedTest r = PairedGreaterTest(a, b);
  EXPECT_EQ(r.n, 5);
  EXPECT_NEAR(r.mean_difference, 0.024, 1e-12);
  EXPECT_NEAR(r.t, 4.7067872433, 1e-6);
  EXPECT_NEAR(r.p_one_sided, 0.0046308484, 1e-8);
  // The other direction: HpT better, p near 1.
  EXPECT_NEAR(PairedGreaterTest(b, a).p_one_sided, 1 - 0.0046308484, 1e-8);
  // Equal runs: no evidence it is worse.
  EXPECT_EQ(PairedGreaterTest({1, 1}, {1, 1}).p_one_sided, 1);
}

}  // namespace
}  // namespace hpt
