// The coordinator's faults on real processes over loopback gRPC: SIGKILLed
// mid-job and started again on the same --state_dir and port, the job
// resumes from its checkpoint file; stopped, it leaves the job to resume;
// and the chaos soak, every kind of process SIGKILLed in turn while a job
// runs, which ends where the uninterrupted run ends. No step is lost or
// applied twice: the parameters match within float tolerance.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/failover_fixture.h"

namespace hpt {
namespace {

using testing::ChildProcess;
using ::testing::HasSubstr;

constexpr char kLong[] = R"(
  name: "outlives-its-coordinator"
  model { preset: "tiny" dropout: 0.1 dropout_set: true }
  data { synthetic { stations: 8 time_steps: 1400 } }
  training { epochs: 3 batch_size: 16 seed: 9 checkpoint_every: 10 }
  hpt { check_window_steps: 8 loss_threshold: 0.5 weight_threshold: 0.5 placement: gpu
        lora { rank: 2 } }
)";

TEST_F(FailoverTest, KilledCoordinatorResumesTheJobFromItsCheckpoint) {
  StartCoordinator("first");
  ChildProcess gpu = StartWorker("gpu", "gpu0");
  const std::string whole = Submit(kLong);
  Job a = WaitUntil(whole, Finished);
  ASSERT_EQ(a.state(), SUCCEEDED) << a.error();

  const std::string faulted = Submit(kLong);
  WaitUntil(faulted, [](const Job& j) { return j.progress().step() >= 35 || Finished(j); });
  const int port = ports_.grpc;
  ASSERT_EQ(kill(coordinator_->pid(), SIGKILL), 0);
  coordinator_->Stop();
  const absl::Time killed = absl::Now();
  StartCoordinator("second", port);  // the worker finds it at the same address
  Job resumed = Get(faulted);
  ASSERT_EQ(resumed.recoveries_size(), 1) << resumed.DebugString();
  EXPECT_THAT(resumed.recoveries(0).cause(), HasSubstr("coordinator restarted"));
  EXPECT_GE(resumed.recoveries(0).from_step(), 30);
  Job b = WaitUntil(faulted, Finished);
  std::cout << "restart to finish: " << absl::ToDoubleSeconds(absl::Now() - killed) << " s\n";
  ASSERT_EQ(b.state(), SUCCEEDED) << b.error();
  EXPECT_EQ(b.job_id(), faulted);
  EXPECT_EQ(b.name(), "outlives-its-coordinator");
  EXPECT_EQ(b.epoch_losses_size(), a.epoch_losses_size());
  EXPECT_EQ(b.hpt().events_size(), a.hpt().events_size());
  EXPECT_EQ(b.hpt().switch_step(), a.hpt().switch_step());
  EXPECT_NEAR(b.progress().test_loss(), a.progress().test_loss(), 1e-5 * a.progress().test_loss());
  // The job finished before the kill exports too: its model is on disk.
  EXPECT_LT(MaxDiff(Export(whole), Export(faulted)), 1e-5);
  // Its checkpoints are listed, newest last, no more than kept.
  grpc::ClientContext context;
  ListCheckpointsRequest request;
  request.set_job_id(faulted);
  ListCheckpointsResponse list;
  ASSERT_TRUE(stub_->ListCheckpoints(&context, request, &list).ok());
  ASSERT_GE(list.checkpoints_size(), 1);
  EXPECT_LE(list.checkpoints_size(), 3);
  EXPECT_GT(list.checkpoints(list.checkpoints_size() - 1).bytes(), 0);
}

// Slurm's scancel or requeue, or a node's shutdown: the coordinator and its
// worker are SIGTERMed together mid-job. The coordinator stops without
// ending the job, so started again on the same state it resumes the job
// from its checkpoint, as after a crash, instead of having cancelled it.
TEST_F(FailoverTest, StoppedCoordinatorLeavesTheJobToResume) {
  StartCoordinator("first");
  auto gpu = std::make_unique<ChildProcess>(StartWorker("gpu", "gpu0"));
  const std::string job = Submit(kLong);
  WaitUntil(job, [](const Job& j) { return j.progress().step() >= 35 || Finished(j); });
  const int port = ports_.grpc;
  ASSERT_EQ(kill(coordinator_->pid(), SIGTERM), 0);
  ASSERT_EQ(kill(gpu->pid(), SIGTERM), 0);
  coordinator_->Stop();
  gpu->Stop();
  StartCoordinator("second", port);
  gpu = std::make_unique<ChildProcess>(StartWorker("gpu", "gpu0"));
  Job resumed = Get(job);
  // The worker's stop may reach the coordinator first, as a worker lost
  // (a recovery of its own); the restart's recovery is the last either way.
  ASSERT_GE(resumed.recoveries_size(), 1) << resumed.DebugString();
  ASSERT_LE(resumed.recoveries_size(), 2) << resumed.DebugString();
  const Recovery& restart = resumed.recoveries(resumed.recoveries_size() - 1);
  EXPECT_THAT(restart.cause(), HasSubstr("coordinator restarted"));
  EXPECT_GE(restart.from_step(), 30);
  EXPECT_NE(resumed.state(), CANCELLED) << resumed.error();
  Job done = WaitUntil(job, Finished);
  ASSERT_EQ(done.state(), SUCCEEDED) << done.error();
  EXPECT_EQ(done.progress().step(), done.progress().total_steps());
}

// The chaos soak: an HpT job of the tiny preset through its switch and LoRA
// phase on one worker of each kind, while processes are SIGKILLed at
// moments drawn from a fixed seed and started again within seconds: the
// GPU worker, the ReRAM worker, the systolic worker and the coordinator
// (on its state folder and port), each at least once. Checkpoints are made
// every 5 steps, so some kills land while one is written. The job must
// succeed, with the same steps, switch and (within float tolerance) test
// loss and parameters as an uninterrupted run: no step lost or applied
// twice. HPT_CHAOS_FAULTS sets the number of faults (default 8); the
// longer soak is
//   bazel test //tests:failover_integration_test --test_filter='*Chaos*'
//     --test_env=HPT_CHAOS_FAULTS=24 --test_output=all
TEST_F(FailoverTest, ChaosSoakLosesNoStepAndEndsWhereAnUninterruptedRunEnds) {
  const char* faults_env = std::getenv("HPT_CHAOS_FAULTS");
  const int faults = faults_env != nullptr ? std::max(4, std::atoi(faults_env)) : 8;
  const std::string spec = absl::StrCat(R"(
  name: "chaos"
  model { preset: "tiny" dropout: 0.1 dropout_set: true }
  data { synthetic { stations: 6 time_steps: 700 } }
  training { epochs: )",
                                        6 * faults, R"( batch_size: 16 seed: 5 checkpoint_every: 5
             optimizer { learning_rate: 0.003 } }
  hpt { check_window_steps: 4 loss_threshold: 0.9 weight_threshold: 0.9 lora { rank: 2 } }
)");
  StartCoordinator("c0");
  const int port = ports_.grpc;
  std::map<std::string, std::optional<ChildProcess>> workers;
  std::map<std::string, int> started;
  auto start = [&](const std::string& kind) {
    workers[kind].emplace(StartWorker(kind, absl::StrCat(kind, started[kind]++)));
  };
  for (const char* kind : {"gpu", "reram", "systolic"}) start(kind);
  const std::string whole = Submit(spec);
  Job a = WaitUntil(whole, Finished, absl::Seconds(600));
  ASSERT_EQ(a.state(), SUCCEEDED) << a.error();

  const std::string chaos = Submit(spec);
  std::mt19937 rng(20261123);
  // Every kind of process once in each round of four, in a drawn order.
  std::vector<std::string> order;
  std::vector<std::string> log;
  int coordinators = 1;
  for (int f = 0; f < faults; ++f) {
    if (order.empty()) {
      order = {"gpu", "reram", "systolic", "coordinator"};
      std::shuffle(order.begin(), order.end(), rng);
    }
    const std::string victim = order.back();
    order.pop_back();
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(800, 2500)(rng)));
    const Job before = Get(chaos);
    if (Finished(before)) break;
    if (victim == "coordinator") {
      ASSERT_EQ(kill(coordinator_->pid(), SIGKILL), 0);
      coordinator_->Stop();
    } else {
      ASSERT_EQ(kill(workers[victim]->pid(), SIGKILL), 0);
      workers[victim]->Stop();
    }
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(200, 1500)(rng)));
    if (victim == "coordinator") {
      StartCoordinator(absl::StrCat("c", coordinators++), port);
    } else {
      start(victim);
    }
    log.push_back(absl::StrCat(victim, " at step ", before.progress().step(), " (",
                               TrainingPhase::Name_Name(before.hpt().phase()), ")"));
  }
  Job b = WaitUntil(chaos, Finished, absl::Seconds(900));
  std::cout << "chaos soak: " << log.size() << " faults:";
  for (const std::string& line : log) std::cout << "\n  " << line;
  int64_t replayed = 0;
  for (const Recovery& r : b.recoveries()) replayed += r.lost_steps();
  std::cout << "\n  " << b.recoveries_size() << " recoveries, " << replayed << " steps replayed\n";
  ASSERT_EQ(b.state(), SUCCEEDED) << b.error() << "\n" << b.DebugString();
  EXPECT_GE(int(log.size()), std::min(faults, 4)) << "the job ended before the faults";
  EXPECT_GE(b.recoveries_size(), 1);
  EXPECT_EQ(b.progress().step(), a.progress().step());
  EXPECT_EQ(b.hpt().switch_step(), a.hpt().switch_step());
  ASSERT_EQ(b.epoch_losses_size(), a.epoch_losses_size());
  EXPECT_NEAR(b.progress().test_loss(), a.progress().test_loss(), 1e-4 * a.progress().test_loss());
  const auto exported_a = Export(whole), exported_b = Export(chaos);
  for (const auto& [name, t] : exported_a) {
    double worst = 0;
    const HostTensor& u = exported_b.at(name);
    for (size_t i = 0; i < t.data.size() && i < u.data.size(); ++i) {
      worst = std::max(worst, double(std::abs(t.data[i] - u.data[i])));
    }
    if (worst > 1e-4) std::cout << "  differs: " << name << " by " << worst << "\n";
  }
  const double diff = MaxDiff(exported_a, exported_b);
  std::cout << "  largest parameter difference from the uninterrupted run: " << diff << "\n";
  EXPECT_LT(diff, 1e-4);
}

}  // namespace
}  // namespace hpt
