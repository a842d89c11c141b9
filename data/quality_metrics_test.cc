#include "data/quality_metrics.h"

#include <cmath>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(QualityAccumulatorTest, MatchesHandComputedValues) {
  // truth 1, 2, 3, 4 (mean 2.5, SS 5); prediction 1, 3, 3, 5.
  QualityAccumulator q;
  q.Add({1, 3}, {1, 2});
  q.Add({3, 5}, {3, 4});
  const QualityMetrics m = q.Finish();
  EXPECT_EQ(m.values(), 4);
  EXPECT_DOUBLE_EQ(m.rmse(), std::sqrt(2.0 / 4));   // errors 0, 1, 0, 1
  EXPECT_DOUBLE_EQ(m.mae(), 0.5);
  EXPECT_DOUBLE_EQ(m.nse(), 1.0 - 2.0 / 5.0);
  // Pearson r^2 by hand: ss_p = 8, ss_y = 5, s_py = 6 -> 36 / 40.
  EXPECT_DOUBLE_EQ(m.r2(), 36.0 / 40.0);
}

TEST(QualityAccumulatorTest, PerfectAndConstantForecasts) {
  QualityAccumulator perfect;
  perfect.Add({1, 2, 3}, {1, 2, 3});
  EXPECT_DOUBLE_EQ(perfect.Finish().nse(), 1.0);
  EXPECT_DOUBLE_EQ(perfect.Finish().r2(), 1.0);
  QualityAccumulator mean;
  mean.Add({2, 2, 2}, {1, 2, 3});  // the mean forecast: NSE 0, r^2 undefined -> 0
  EXPECT_DOUBLE_EQ(mean.Finish().nse(), 0.0);
  EXPECT_DOUBLE_EQ(mean.Finish().r2(), 0.0);
  EXPECT_EQ(QualityAccumulator().Finish().values(), 0);
}

}  // namespace
}  // namespace hpt
