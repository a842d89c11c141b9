// The job runner's failover limit, with a real LibTorch GPU executor in
// this process behind a client that starts failing.
#include "coordinator/jobs/job_runner.h"

#include <atomic>
#include <memory>

#include "absl/time/clock.h"
#include "coordinator/dispatch/local_worker_client.h"
#include "coordinator/jobs/job_manager.h"
#include "gtest/gtest.h"
#include "workers/gpu/gpu_executor.h"

namespace hpt {
namespace {

// A GPU worker that answers `healthy_forwards` forwards, then fails every
// call as a worker that is gone would (UNAVAILABLE).
class FailingClient : public LocalWorkerClient {
 public:
  FailingClient(TaskExecutor* executor, std::atomic<int>* forwards, int healthy_forwards)
      : LocalWorkerClient("gpu0", executor), forwards_(forwards), healthy_(healthy_forwards) {}

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
  static absl::Status Gone() { return absl::UnavailableError("worker gpu0 is gone"); }

  std::atomic<int>* forwards_;
  const int healthy_;
};

TEST(JobRunnerTest, AWorkerThatFailsEveryAttemptEndsTheJobAfterTheFailoverLimit) {
  GpuExecutor::Options g;
  g.device = "cpu";
  auto gpu = *GpuExecutor::Create(g);
  std::atomic<int> forwards{0};
  WorkerPool pool({});
  pool.AddStatic("gpu0", DeviceKind::gpu);
  JobRunner::Options options;
  options.client_factory = [&](const std::string&, DeviceKind::Name) {
    return std::make_unique<FailingClient>(gpu.get(), &forwards, 12);
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
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  // The first attempt's runs end at its checkpoints (every 5 steps); the
  // run of steps 10-14 passes the 12 healthy forwards and fails whole, so
  // the job reached step 10. Every attempt after it fails at once, from
  // that checkpoint: no attempt makes progress, so the limit ends the job.
  Job job;
  for (const absl::Time give_up = absl::Now() + absl::Seconds(120); absl::Now() < give_up;) {
    job = *jobs.Get(submitted->job_id());
    if (JobManager::IsTerminal(job.state())) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(job.state(), FAILED) << job.DebugString();
  EXPECT_EQ(job.recoveries_size(), 3);
  EXPECT_EQ(job.progress().step(), 10);
  EXPECT_EQ(job.recoveries(0).from_step(), 10);
}

}  // namespace
}  // namespace hpt
