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

// Two stations far apart in level: forecasting each one's mean is no
// skill (NSE 0), however much of the pooled variance the levels explain;
// and a station's series alone scores as it would by itself.
TEST(QualityAccumulatorTest, EachStationIsCentredOnItsOwnMean) {
  QualityAccumulator means;
  means.Add({2, 2, 2}, {1, 2, 3}, 0);
  means.Add({102, 102, 102}, {101, 102, 103}, 1);
  const QualityMetrics m = means.Finish();
  EXPECT_EQ(m.values(), 6);
  EXPECT_DOUBLE_EQ(m.rmse(), std::sqrt(4.0 / 6));
  EXPECT_DOUBLE_EQ(m.nse(), 0.0);  // pooled about one mean: 1 - 4 / 15004
  EXPECT_DOUBLE_EQ(m.r2(), 0.0);
  // Station 1 tracks its truth with errors 0, 1, 0 (SS 2): NSE 1 - 1 / (2 + 2).
  QualityAccumulator mixed;
  mixed.Add({2, 2, 2}, {1, 2, 3}, 0);
  mixed.Add({101, 103, 103}, {101, 102, 103}, 1);
  EXPECT_DOUBLE_EQ(mixed.Finish().nse(), 1.0 - (2.0 + 1.0) / 4.0);
  // A constant series at a high level is constant, not round-off.
  QualityAccumulator level;
  level.Add({1e6 + 0.1, 1e6 + 0.1, 1e6 + 0.1}, {1e6 + 0.1, 1e6 + 0.1, 1e6 + 0.1}, 0);
  EXPECT_DOUBLE_EQ(level.Finish().nse(), 0.0);
  EXPECT_DOUBLE_EQ(level.Finish().r2(), 0.0);
  QualityAccumulator alone;
  alone.Add({101, 103, 103}, {101, 102, 103}, 7);
  EXPECT_DOUBLE_EQ(alone.Finish().nse(), 1.0 - 1.0 / 2.0);
}

}  // namespace
}  // namespace hpt
