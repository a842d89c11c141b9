#include "coordinator/training/switch_criteria.h"

#include <cmath>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(SwitchTestsTest, ThreePointMarginIsTheWorstConditionOverItsBound) {
  // Drops 5 % and 2.1 %, the second smaller: passes; the first drop decides.
  const double plateau[3] = {1.0, 0.95, 0.93};
  TestOutcome t = ThreePointOutcome(plateau, 0.1, "loss");
  EXPECT_TRUE(t.passed);
  EXPECT_NEAR(t.margin, 0.5, 1e-12);  // 5 % of a 10 % bound
  EXPECT_EQ(t.detail, "loss: first drop 5 % (bound 10 %)");
  // Drops of 9.5 % then 10.4 % (0.0941 < 0.095 absolute, so the order
  // holds): the second fails by 1.04x its bound.
  const double fast[3] = {1.0, 0.905, 0.81088};
  t = ThreePointOutcome(fast, 0.1, "loss");
  EXPECT_FALSE(t.passed);
  EXPECT_NEAR(t.margin, (0.905 - 0.81088) / 0.905 / 0.1, 1e-12);
  EXPECT_EQ(t.detail, "loss: second drop 10.4 % (bound 10 %)");
  // Drops under the bound but growing: the ordering decides, 0.03 / 0.02.
  const double speeding[3] = {1.0, 0.98, 0.95};
  t = ThreePointOutcome(speeding, 0.1, "weights");
  EXPECT_FALSE(t.passed);
  EXPECT_NEAR(t.margin, 1.5, 1e-9);
  EXPECT_EQ(t.detail, "weights: second drop 0.03 not below the first 0.02");
  // A rise then a larger rise: ordering fails beyond 1.
  const double up[3] = {1.0, 1.1, 1.15};
  t = ThreePointOutcome(up, 0.1, "loss");
  EXPECT_FALSE(t.passed);
  EXPECT_NEAR(t.margin, 1 + (-0.05 + 0.1) / 1.1, 1e-9);
  const double zero[3] = {0, 1, 1};
  EXPECT_FALSE(ThreePointOutcome(zero, 0.1, "loss").passed);
  EXPECT_TRUE(std::isinf(ThreePointOutcome(zero, 0.1, "loss").margin));
}

TEST(SwitchTestsTest, StudentQuantileMatchesTables) {
  // Student's t tables (e.g. NIST/SEMATECH e-Handbook, 1.3.6.7.2).
  EXPECT_NEAR(StudentQuantile(0.95, 3), 2.353363, 1e-5);
  EXPECT_NEAR(StudentQuantile(0.975, 10), 2.228139, 1e-5);
  EXPECT_NEAR(StudentQuantile(0.95, 1), 6.313752, 1e-5);
  EXPECT_NEAR(StudentQuantile(0.05, 3), -2.353363, 1e-5);
  EXPECT_EQ(StudentQuantile(0.5, 7), 0);
  EXPECT_TRUE(std::isnan(StudentQuantile(1.0, 3)));
}

TEST(SwitchTestsTest, TrendBoundsTheGainLeftByTheFastestFallTheDataAllow) {
  // y = 1.0, 0.99, 0.97, 0.96, 0.95 over windows 0..4, by hand: mean
  // 0.974, Sxx 10, Sxy -0.13, so a slope of -0.013 a window; residuals 0,
  // 0.003, -0.004, -0.001, 0.002.
  const std::vector<double> y = {1.0, 0.99, 0.97, 0.96, 0.95};
  const double slope = -0.013, level = 0.974 + slope * 2;
  const double sse = 0.003 * 0.003 + 0.004 * 0.004 + 0.001 * 0.001 + 0.002 * 0.002;
  const double se = std::sqrt(sse / 3 / 10);
  const double fall = -slope + 2.353363 * se;
  TestOutcome t = TrendOutcome(y, 10, 0.01);
  EXPECT_FALSE(t.passed);
  EXPECT_NEAR(t.margin, fall * 10 / level / 0.01, 1e-4);
  // With no window left there is nothing to gain: it passes at the end.
  t = TrendOutcome(y, 0, 0.01);
  EXPECT_TRUE(t.passed);
  EXPECT_EQ(t.margin, 0);
  // A flat, noiseless series passes whatever is left.
  EXPECT_TRUE(TrendOutcome({0.5, 0.5, 0.5, 0.5}, 1000, 0.01).passed);
  // Fewer than three windows: no line with an error.
  EXPECT_FALSE(TrendOutcome({1.0, 0.9}, 1, 0.01).passed);
}

TEST(SwitchTestsTest, PlateauComparesTheDropWithItsStandardError) {
  // Means 1.00 and 0.98, variances 0.01 over 25 steps each: SE
  // sqrt(0.0004 + 0.0004) = 0.02828, the drop 0.707 SE: a plateau.
  TestOutcome t = PlateauOutcome({1.0, 0.01, 25}, {0.98, 0.01, 25}, 1.645);
  EXPECT_TRUE(t.passed);
  EXPECT_NEAR(t.margin, 0.02 / std::sqrt(0.0008) / 1.645, 1e-9);
  // The same drop with a tenth of the variance: 2.24 SE, still falling.
  t = PlateauOutcome({1.0, 0.001, 25}, {0.98, 0.001, 25}, 1.645);
  EXPECT_FALSE(t.passed);
  EXPECT_NEAR(t.margin, 0.02 / std::sqrt(0.00008) / 1.645, 1e-9);
  // A rise is a plateau (negative margin).
  EXPECT_LT(PlateauOutcome({1.0, 0.01, 25}, {1.1, 0.01, 25}, 1.645).margin, 0);
  // Zero variance: any drop is significant, none is not.
  EXPECT_FALSE(PlateauOutcome({1.0, 0, 5}, {0.99, 0, 5}, 1.645).passed);
  EXPECT_TRUE(PlateauOutcome({1.0, 0, 5}, {1.0, 0, 5}, 1.645).passed);
}

TEST(SwitchTestsTest, MarginBoundsLorasExcessLossOnThePairedBatches) {
  // Differences 0.02, 0.03, 0.01, 0.02: mean 0.02, SD sqrt(0.0002 / 3),
  // SE 0.0040825; t(0.99, 3 dof) = 4.5407 (tables), so LoRA is at most
  // 0.02 + 4.5407 * 0.0040825 = 0.038537 above a full mean of 1.
  const std::vector<double> full = {1.0, 1.2, 0.8, 1.0}, lora = {1.02, 1.23, 0.81, 1.02};
  TestOutcome t = MarginOutcome(full, lora, 0.05, 0.01);
  EXPECT_TRUE(t.passed);
  EXPECT_NEAR(t.margin, 0.038537 / 0.05, 1e-4);
  EXPECT_EQ(t.detail,
            "margin: LoRA's loss 2 % above the full model's, at most 3.85 % (99 % bound; "
            "margin 5 %)");
  // The same gap under a 3 % margin is not shown small enough.
  EXPECT_FALSE(MarginOutcome(full, lora, 0.03, 0.01).passed);
  // Batch-to-batch spread cancels in the pairs: a constant 1 % gap over
  // noisy losses passes with margin 0.2, where an unpaired test of the
  // same 200 losses would call the copies different.
  std::vector<double> noisy, above;
  for (int i = 0; i < 200; ++i) {
    noisy.push_back(1.0 + 0.3 * std::sin(i));
    above.push_back(noisy.back() * 1.01);
  }
  t = MarginOutcome(noisy, above, 0.05, 0.01);
  EXPECT_TRUE(t.passed);
  EXPECT_GT(t.margin, 0.2);
  EXPECT_LT(t.margin, 0.21);
  // LoRA below the full model passes with a negative margin.
  EXPECT_LT(MarginOutcome(lora, full, 0.05, 0.01).margin, 0);
  // Too few pairs, or a full loss that is not positive.
  EXPECT_FALSE(MarginOutcome({1.0}, {1.0}, 0.05, 0.01).passed);
  EXPECT_FALSE(MarginOutcome({0, 0, 0}, {0.1, 0.1, 0.1}, 0.05, 0.01).passed);
  EXPECT_TRUE(MarginOutcome({0, 0, 0}, {0, 0, 0}, 0.05, 0.01).passed);
}

}  // namespace
}  // namespace hpt
