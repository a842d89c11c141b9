// ReferenceForecasts scores persistence and climatology on a spec's test
// split exactly as a job's own report does.
#include "benchmarks/paper_projection.h"

#include "benchmarks/bench_jobs.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(ReferenceForecastsTest, MatchTheJobsOwnReport) {
  JobSpec spec;
  spec.mutable_model()->set_preset("tiny");
  spec.mutable_data()->mutable_synthetic()->set_stations(6);
  spec.mutable_data()->mutable_synthetic()->set_time_steps(240);
  spec.mutable_training()->set_epochs(1);
  spec.mutable_training()->set_batch_size(16);
  spec.mutable_training()->set_seed(3);
  absl::StatusOr<QualityMetrics> reference = ReferenceForecasts(spec);
  ASSERT_TRUE(reference.ok()) << reference.status();
  absl::StatusOr<BenchRun> run = RunInProcess(spec, TrainingMode::full, "reference", 1);
  ASSERT_TRUE(run.ok()) << run.status();
  const QualityMetrics& q = run->job.test_metrics();
  ASSERT_GT(q.persistence_rmse(), 0);
  EXPECT_DOUBLE_EQ(reference->persistence_rmse(), q.persistence_rmse());
  EXPECT_DOUBLE_EQ(reference->climatology_rmse(), q.climatology_rmse());
  EXPECT_EQ(reference->climatology(), q.climatology());
  EXPECT_EQ(reference->values(), q.values());
}

}  // namespace
}  // namespace hpt
