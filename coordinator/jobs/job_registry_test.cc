#include "coordinator/jobs/job_registry.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

Job NewJob(const std::string& id) {
  Job job;
  job.set_job_id(id);
  job.set_state(QUEUED);
  return job;
}

TEST(JobRegistryTest, AnUpdateOfAnUnknownJobIsNotFoundNamingIt) {
  JobRegistry registry({});
  bool ran = false;
  absl::Status s = registry.Update("job-000009", [&](JobRegistry::Locked&) {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no job 'job-000009'");
  EXPECT_FALSE(ran);
}

TEST(JobRegistryTest, AnUpdateChangesTheJobAndTellsItsWatchersOnce) {
  JobRegistry registry({});
  registry.Add(NewJob("job-000001"), "request-a", /*persist=*/false);
  std::vector<JobState> seen;
  absl::StatusOr<int64_t> token =
      registry.Watch("job-000001", [&](const Job& job) { seen.push_back(job.state()); });
  ASSERT_TRUE(token.ok()) << token.status();
  ASSERT_TRUE(registry
                  .Update("job-000001",
                          [](JobRegistry::Locked& r) {
                            r.job().set_name("renamed");
                            r.SetState(RUNNING, "");
                            return absl::OkStatus();
                          })
                  .ok());
  EXPECT_THAT(seen, ::testing::ElementsAre(QUEUED, RUNNING));
  EXPECT_EQ(registry.Get("job-000001")->name(), "renamed");
  // The update's own error comes back; what it changed before stays.
  absl::Status refused = registry.Update("job-000001", [](JobRegistry::Locked& r) {
    r.job().set_name("half");
    return absl::FailedPreconditionError("no");
  });
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.Get("job-000001")->name(), "half");
  EXPECT_EQ(registry.JobOfRequest("request-a")->job_id(), "job-000001");
  EXPECT_FALSE(registry.JobOfRequest("request-b").has_value());
  registry.Unwatch(*token);
}

// A job that ends mid-evaluation (cancelled, failed) does not go on
// saying it evaluates.
TEST(JobRegistryTest, AnEndedJobNoLongerSaysItEvaluates) {
  JobRegistry registry({});
  Job job = NewJob("job-000003");
  job.set_state(RUNNING);
  job.mutable_progress()->set_evaluating("the test split: 256 of 5948 samples");
  registry.Add(job, "", /*persist=*/false);
  ASSERT_TRUE(registry
                  .Update("job-000003",
                          [](JobRegistry::Locked& r) {
                            r.SetState(CANCELLED, "cancelled by request");
                            return absl::OkStatus();
                          })
                  .ok());
  EXPECT_EQ(registry.Get("job-000003")->progress().evaluating(), "");
  EXPECT_EQ(registry.Get("job-000003")->state(), CANCELLED);
}

// Between two steps' reports a running job's elapsed time goes on with
// the clock; it stops once the job ends, and does not count the queue.
TEST(JobRegistryTest, ARunningJobsElapsedTimeCountsToTheMomentOfReading) {
  absl::Time now = absl::FromUnixSeconds(1000);
  JobRegistry::Options options;
  options.now = [&] { return now; };
  JobRegistry registry(options);
  registry.Add(NewJob("job-000004"), "", /*persist=*/false);
  now += absl::Seconds(30);  // queued: not elapsed
  EXPECT_EQ(registry.Get("job-000004")->progress().elapsed_s(), 0);
  auto update = [&](auto fn) {
    ASSERT_TRUE(registry
                    .Update("job-000004",
                            [&](JobRegistry::Locked& r) {
                              fn(r);
                              return absl::OkStatus();
                            })
                    .ok());
  };
  update([](JobRegistry::Locked& r) { r.SetState(RUNNING, ""); });
  now += absl::Seconds(2);
  EXPECT_DOUBLE_EQ(registry.Get("job-000004")->progress().elapsed_s(), 2);
  JobProgress p;
  p.set_step(1);
  p.set_elapsed_s(2.5);  // the trainer's own clock at its step's end
  update([&](JobRegistry::Locked& r) { r.SetProgress(p); });
  now += absl::Seconds(7);  // a long step
  EXPECT_DOUBLE_EQ(registry.Get("job-000004")->progress().elapsed_s(), 9.5);
  EXPECT_DOUBLE_EQ(registry.List()[0].progress().elapsed_s(), 9.5);
  // Setting the running state again (a fallback, say) does not restart it.
  update([](JobRegistry::Locked& r) { r.SetState(RUNNING, ""); });
  now += absl::Seconds(1);
  EXPECT_DOUBLE_EQ(registry.Get("job-000004")->progress().elapsed_s(), 10.5);
  // An ended job keeps the time it ran, to its end.
  update([](JobRegistry::Locked& r) { r.SetState(SUCCEEDED, ""); });
  now += absl::Seconds(60);
  EXPECT_DOUBLE_EQ(registry.Get("job-000004")->progress().elapsed_s(), 10.5);
}

TEST(JobRegistryTest, ForgetKeepsTheJobWhenTheCheckRefuses) {
  JobRegistry registry({});
  registry.Add(NewJob("job-000001"), "", /*persist=*/false);
  absl::Status s = registry.Forget("job-000001", [](const JobRegistry::Record& r) {
    return r.job.state() == QUEUED ? absl::FailedPreconditionError("still queued")
                                   : absl::OkStatus();
  });
  EXPECT_EQ(s.message(), "still queued");
  EXPECT_TRUE(registry.Get("job-000001").ok());
  ASSERT_TRUE(
      registry.Forget("job-000001", [](const JobRegistry::Record&) { return absl::OkStatus(); })
          .ok());
  EXPECT_EQ(registry.Get("job-000001").status().code(), absl::StatusCode::kNotFound);
}

TEST(JobRegistryTest, FinishedJobsPastTheLimitAreForgottenAfterTheUpdateThatEndsThem) {
  JobRegistry::Options options;
  options.max_retained_jobs = 1;
  JobRegistry registry(options);
  for (const char* id : {"job-000001", "job-000002", "job-000003"}) {
    registry.Add(NewJob(id), "", /*persist=*/false);
  }
  for (const char* id : {"job-000001", "job-000002"}) {
    ASSERT_TRUE(registry
                    .Update(id,
                            [](JobRegistry::Locked& r) {
                              r.SetState(SUCCEEDED, "");
                              // The record is still whole inside the update.
                              EXPECT_EQ(r.job().state(), SUCCEEDED);
                              return absl::OkStatus();
                            })
                    .ok());
  }
  // One finished job is kept (the newest by id order is what remains) and
  // the unfinished one is never forgotten.
  std::vector<std::string> left;
  for (const Job& job : registry.List()) left.push_back(job.job_id());
  EXPECT_THAT(left, ::testing::ElementsAre("job-000002", "job-000003"));
  EXPECT_TRUE(registry.Cancelled("job-000001"));  // gone counts as cancelled
}

}  // namespace
}  // namespace hpt
