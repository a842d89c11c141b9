#include "hptctl/job_format.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

Job RunningJob() {
  Job job;
  job.set_job_id("job-000007");
  job.set_name("demo");
  job.set_state(RUNNING);
  job.mutable_spec()->mutable_model()->set_preset("tiny");
  JobProgress* p = job.mutable_progress();
  p->set_epoch(2);
  p->set_epochs(3);
  p->set_step(50);
  p->set_total_steps(200);
  p->set_loss(0.123456);
  p->set_samples_per_s(88.04);
  p->set_eta_s(75);
  return job;
}

TEST(JobFormatTest, ProgressBarShowsFractionLossAndEta) {
  EXPECT_EQ(FormatProgress(RunningJob(), 8),
            "[##......]  25% epoch 2/3 step 50/200 loss 0.1235  88.0 "
            "samples/s  ETA 1m15s");
}

TEST(JobFormatTest, ProgressBeforeFirstStepHasNoLoss) {
  Job job = RunningJob();
  job.mutable_progress()->set_step(0);
  EXPECT_EQ(FormatProgress(job, 4),
            "[....]   0% epoch 2/3 step 0/200 loss -  88.0 samples/s  ETA -");
}

TEST(JobFormatTest, DurationsReadNaturally) {
  EXPECT_EQ(FormatDuration(4.4), "4s");
  EXPECT_EQ(FormatDuration(65), "1m05s");
  EXPECT_EQ(FormatDuration(7300), "2h01m");
  EXPECT_EQ(FormatDuration(-1), "-");
}

TEST(JobFormatTest, ExitCodesAreStable) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), 0);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("x")), 3);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("x")), 4);
  EXPECT_EQ(ExitCodeFor(absl::UnavailableError("x")), 5);
  EXPECT_EQ(ExitCodeFor(absl::DeadlineExceededError("x")), 5);
  EXPECT_EQ(ExitCodeFor(absl::InternalError("x")), 6);
}

TEST(JobFormatTest, SummaryListsLossesAndError) {
  Job job = RunningJob();
  job.set_state(FAILED);
  job.add_epoch_losses(0.5);
  job.add_epoch_losses(0.25);
  job.set_error("worker 127.0.0.1:1 forward: boom");
  const std::string s = FormatSummary(job);
  EXPECT_NE(s.find("job job-000007 (demo): failed"), std::string::npos);
  EXPECT_NE(s.find("epoch loss 0.5000 0.2500"), std::string::npos);
  EXPECT_NE(s.find("error      worker 127.0.0.1:1 forward: boom"), std::string::npos);
}

}  // namespace
}  // namespace hpt
