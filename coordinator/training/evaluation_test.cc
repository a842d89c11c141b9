// The test split's quality beside its references: a forecast that repeats
// the last input value scores persistence's RMSE and a skill of 0; the
// station's mean scores climatology's where the data has no times; on
// hourly rows with a daily cycle, climatology by hour of day beats that
// mean.
#include "coordinator/training/evaluation.h"

#include <cmath>

#include "data/timestamps.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

constexpr int64_t kSteps = 6;

// Two stations over `days` of hourly rows: a daily wave (amplitude 5 and
// 8 around 20 and 30) and a slow drift; the last 2 days test.
WindowDataset Hourly(int64_t days, bool times) {
  TimeSeriesMatrix m;
  m.columns = 2;
  m.rows = days * 24;
  int64_t start;
  ParseTimestamp("2023-06-01", &start);
  for (int64_t r = 0; r < m.rows; ++r) {
    if (times) m.times.push_back(start + 3600 * r);
    const double wave = std::sin(2 * M_PI * double(r % 24) / 24);
    m.values.push_back(float(20 + 5 * wave + 0.01 * r));
    m.values.push_back(float(30 + 8 * wave - 0.02 * r));
  }
  WindowOptions w;
  w.input_steps = kSteps;
  w.train = {0, m.rows - 48};
  w.test = {m.rows - 48, m.rows};
  return *WindowDataset::Create(std::move(m), w);
}

TrainingSpec Training() {
  TrainingSpec t;
  t.set_batch_size(8);
  t.set_eval_batch_size(8);
  return t;
}

// Forecasts each token's last input value, normalised like the targets.
absl::StatusOr<HostTensor> Persist(const HostTensor& x) {
  HostTensor y({x.shape[0], x.shape[1], 1});
  for (int64_t i = 0; i < x.shape[0] * x.shape[1]; ++i) y.data[i] = x.data[i * kSteps + kSteps - 1];
  return y;
}

// Forecasts 0: each station's training mean.
absl::StatusOr<HostTensor> Mean(const HostTensor& x) {
  return HostTensor({x.shape[0], x.shape[1], 1});
}

TEST(EvaluationTest, PersistenceScoresASkillOfZero) {
  const WindowDataset data = Hourly(10, true);
  auto e = EvaluateTestSplit(data, Training(), ModelConfig(), Persist);
  ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
  const QualityMetrics& q = (*e)->metrics;
  EXPECT_GT(q.rmse(), 0.5);
  EXPECT_NEAR(q.persistence_rmse(), q.rmse(), 1e-9 * q.rmse());
  EXPECT_NEAR(q.skill(), 0, 1e-9);
  EXPECT_EQ(q.climatology(), "station mean by hour of day");
  // The wave repeats daily: the hour's mean misses only the drift, and
  // the station's one mean misses the whole wave.
  auto mean = EvaluateTestSplit(data, Training(), ModelConfig(), Mean);
  ASSERT_TRUE(mean.ok() && mean->has_value()) << mean.status();
  EXPECT_LT(q.climatology_rmse(), 0.5 * (*mean)->metrics.rmse());
}

TEST(EvaluationTest, WithoutTimesClimatologyIsTheStationMean) {
  const WindowDataset data = Hourly(10, false);
  auto e = EvaluateTestSplit(data, Training(), ModelConfig(), Mean);
  ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
  const QualityMetrics& q = (*e)->metrics;
  EXPECT_EQ(q.climatology(), "station mean");
  EXPECT_NEAR(q.climatology_rmse(), q.rmse(), 1e-6 * q.rmse());
  // The mean misses the wave by far more than an hour's lag does.
  EXPECT_LT(q.skill(), -1);
  EXPECT_NEAR(q.skill(), 1 - q.rmse() / q.persistence_rmse(), 1e-12);
}

}  // namespace
}  // namespace hpt
