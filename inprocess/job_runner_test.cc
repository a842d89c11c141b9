// The job runner's failover limit, with a real LibTorch GPU executor in
// this process behind a client that starts failing.
#include "coordinator/jobs/job_runner.h"

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/dispatch/local_worker_client.h"
#include "coordinator/jobs/job_manager.h"
#include "gtest/gtest.h"
#include "workers/gpu/gpu_executor.h"

namespace hpt {
namespace {

// A GPU worker that answers `healthy_forwards` forwards, then fails every
// call with `gone`: UNAVAILABLE as a worker that stopped answering, or
// CANCELLED as one whose server is stopping.
class FailingClient : public LocalWorkerClient {
 public:
  FailingClient(TaskExecutor* executor, std::atomic<int>* forwards, int healthy_forwards,
                absl::Status gone)
      : LocalWorkerClient("gpu0", executor),
        forwards_(forwards),
        healthy_(healthy_forwards),
        gone_(std::move(gone)) {}

  absl::StatusOr<LoadParametersResponse> LoadParameters(
      const LoadParametersHeader& header, const std::vector<TensorChunk>& chunks) override {
    if (Broken()) return Gone();
    return LocalWorkerClient::LoadParameters(header, chunks);
  }
  absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& request) override {
    if (++*forwards_ > healthy_) return Gone();
    return LocalWorkerClient::Forward(request);
  }
  // A run counts its steps' forwards; one that would pass the healthy
  // count fails whole, as a worker lost mid-run fails its run.
  absl::StatusOr<TrainRunResponse> TrainRun(const TrainRunRequest& request) override {
    if ((*forwards_ += request.steps_size()) > healthy_) return Gone();
    return LocalWorkerClient::TrainRun(request);
  }

 private:
  bool Broken() const { return forwards_->load() >= healthy_; }
  absl::Status Gone() const { return gone_; }

  std::atomic<int>* forwards_;
  const int healthy_;
  const absl::Status gone_;
};

// Runs a job whose GPU worker fails every call with `gone` after 12
// forwards, under a limit of 3 failovers, to its end.
Job RunToTheLimit(const absl::Status& gone) {
  GpuExecutor::Options g;
  g.device = "cpu";
  auto gpu = *GpuExecutor::Create(g);
  std::atomic<int> forwards{0};
  WorkerPool pool({});
  pool.AddStatic("gpu0", DeviceKind::gpu);
  JobRunner::Options options;
  options.client_factory = [&](const std::string&, DeviceKind::Name) {
    return std::make_unique<FailingClient>(gpu.get(), &forwards, 12, gone);
  };
  options.worker_wait = absl::Seconds(5);
  options.max_failovers = 3;
  JobRegistry registry({});
  JobRunner runner(options, &registry, &pool);
  JobScheduler scheduler(1, [&](const std::string& id) { runner.Run(id); });
  JobManager jobs({}, {&registry, &runner, &scheduler, &pool});
  SubmitJobRequest request;
  request.set_spec_text(R"(
    data { synthetic { stations: 4 time_steps: 200 } }
    training { epochs: 40 batch_size: 8 checkpoint_every: 5 }
    hpt { mode: full })");
  absl::StatusOr<Job> submitted = jobs.Submit(request);
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok()) return Job();
  // The registry calls the watcher on every change: the end is noticed
  // when it happens, not at a polling interval.
  absl::Mutex mu;
  Job last;
  bool ended = false;
  absl::StatusOr<int64_t> token = jobs.Watch(submitted->job_id(), [&](const Job& job) {
    absl::MutexLock lock(&mu);
    last = job;
    ended = JobManager::IsTerminal(job.state());
  });
  EXPECT_TRUE(token.ok()) << token.status();
  if (!token.ok()) return Job();
  {
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(&ended), absl::Seconds(120));
  }
  jobs.Unwatch(*token);
  absl::MutexLock lock(&mu);
  return last;
}

// The first attempt's runs end at its checkpoints (every 5 steps); the run
// of steps 10-14 passes the 12 healthy forwards and fails whole, so the job
// reached step 10. Every attempt after it fails at once, from that
// checkpoint: no attempt makes progress, so the limit ends the job.
TEST(JobRunnerTest, AWorkerThatFailsEveryAttemptEndsTheJobAfterTheFailoverLimit) {
  const Job job = RunToTheLimit(absl::UnavailableError("worker gpu0 is gone"));
  ASSERT_EQ(job.state(), FAILED) << job.DebugString();
  EXPECT_EQ(job.recoveries_size(), 3);
  EXPECT_EQ(job.progress().step(), 10);
  EXPECT_EQ(job.recoveries(0).from_step(), 10);
  EXPECT_NE(job.error().find("lost 4 times in a row"), std::string::npos) << job.error();
  EXPECT_NE(job.error().find("worker gpu0 is gone"), std::string::npos) << job.error();
  EXPECT_NE(job.error().find("hptctl resume " + job.job_id()), std::string::npos) << job.error();
}

// A worker whose server stops ends its calls CANCELLED. Nobody cancelled
// the job, so past the limit it failed: FAILED, not CANCELLED.
TEST(JobRunnerTest, AWorkerStoppingPastTheLimitFailsTheJobNotCancelsIt) {
  const Job job = RunToTheLimit(absl::CancelledError("worker gpu0's server is stopping"));
  ASSERT_EQ(job.state(), FAILED) << job.DebugString();
  EXPECT_EQ(job.recoveries_size(), 3);
  EXPECT_NE(job.error().find("server is stopping"), std::string::npos) << job.error();
}

}  // namespace
}  // namespace hpt
