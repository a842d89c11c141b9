// GpuExecutor::TrainRun: a run of whole steps on resident samples trains
// exactly what the same steps sent as task calls train (losses and
// parameters bit for bit, alone and data-parallel), waits for the device
// once a run, calls no item() inside it, and answers a retry without
// training again. The CPU twin of the CUDA path's synchronisation bound.
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/worker_tasks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/gpu/gpu_run_testing.h"
#include "workers/rendezvous_store.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;
using namespace gpu_run_testing;

// Counts the ATen ops that read a device value on the host (item() and
// what it calls) on this thread while it lives.
class ItemCounter {
 public:
  ItemCounter() {
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(
            [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
              const std::string name = fn.name();
              if (name == "aten::item" || name == "aten::_local_scalar_dense") ++count_;
              return nullptr;
            })
            .scopes({at::RecordScope::FUNCTION}));
  }
  ~ItemCounter() { at::removeCallback(handle_); }
  static int count() { return count_; }
  static void reset() { count_ = 0; }

 private:
  at::CallbackHandle handle_;
  static inline std::atomic<int> count_{0};
};

class GpuRunTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuRunTest, ARunTrainsWhatTheSameTaskCallsTrain) {
  const WindowDataset data = Data(6);
  auto tasks = *GpuExecutor::Create({});
  auto runs = *GpuExecutor::Create({});
  ASSERT_TRUE(tasks->Load(Header("j", data, false, GetParam()), {}).ok());
  ASSERT_TRUE(runs->Load(Header("j", data, true, GetParam()), Series(data)).ok());
  const std::vector<double> expected = TaskSteps(*tasks, "j", data, 0, 5, 4);
  absl::StatusOr<TrainRunResponse> run = runs->TrainRun(RunOf("j", data, 0, 5, 4));
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->losses_size(), 5);
  for (int j = 0; j < 5; ++j) EXPECT_EQ(run->losses(j), expected[j]) << "step " << j;
  ExpectSameParameters(Params(*runs, "j"), Params(*tasks, "j"));
  // One step's tasks, costed from their recorded work.
  EXPECT_GT(run->forward().simulated_s(), 0);
  EXPECT_GT(run->backward().work().kernels_size(), 0);
  EXPECT_GT(run->update().work().optimizer_numel_size(), 0);
  EXPECT_GT(run->measured_s(), 0);
  EXPECT_NEAR(5 * (run->forward().measured_s() + run->backward().measured_s() +
                   run->update().measured_s()),
              run->measured_s(), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Precisions, GpuRunTest, ::testing::Values("fp32", "bf16"));

TEST(GpuRunTokenGroupsTest, GroupedSamplesAreGatheredAsTheDataSetGathersThem) {
  // Samples of 3 of 9 stations, groups every 2: ids encode (row, group).
  const WindowDataset data = Data(9, 3);
  ASSERT_GT(data.num_groups(), 1);
  auto tasks = *GpuExecutor::Create({});
  auto runs = *GpuExecutor::Create({});
  ASSERT_TRUE(tasks->Load(Header("g", data, false), {}).ok());
  ASSERT_TRUE(runs->Load(Header("g", data, true), Series(data)).ok());
  const std::vector<double> expected = TaskSteps(*tasks, "g", data, 0, 3, 5);
  absl::StatusOr<TrainRunResponse> run = runs->TrainRun(RunOf("g", data, 0, 3, 5));
  ASSERT_TRUE(run.ok()) << run.status();
  for (int j = 0; j < 3; ++j) EXPECT_EQ(run->losses(j), expected[j]);
  ExpectSameParameters(Params(*runs, "g"), Params(*tasks, "g"));
}

TEST(GpuRunTrialTest, ATrialTrainsBesideTheModelAsItsTaskCallsDo) {
  // The trial's copy (here a second model of its own seed) takes a step
  // on the whole batch after each of the model's, at its own rate.
  const WindowDataset data = Data(6);
  auto tasks = *GpuExecutor::Create({});
  auto runs = *GpuExecutor::Create({});
  LoadParametersHeader trial = Header("m/trial", data, false);
  trial.set_init_seed(8);
  ASSERT_TRUE(tasks->Load(Header("m", data, false), {}).ok());
  ASSERT_TRUE(tasks->Load(trial, {}).ok());
  ASSERT_TRUE(runs->Load(Header("m", data, true), Series(data)).ok());
  ASSERT_TRUE(runs->Load(trial, {}).ok());
  std::vector<double> main_losses, trial_losses;
  for (int64_t j = 0; j < 4; ++j) {
    main_losses.push_back(TaskSteps(*tasks, "m", data, j, 1, 4)[0]);
    trial_losses.push_back(TaskSteps(*tasks, "m/trial", data, j, 1, 4)[0]);
  }
  TrainRunRequest request = RunOf("m", data, 0, 4, 4);
  request.set_trial_job("m/trial");
  for (const RunStep& step : request.steps()) *request.add_trial_steps() = step;
  absl::StatusOr<TrainRunResponse> run = runs->TrainRun(request);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(std::vector<double>(run->losses().begin(), run->losses().end()), main_losses);
  EXPECT_EQ(std::vector<double>(run->trial_losses().begin(), run->trial_losses().end()),
            trial_losses);
  ExpectSameParameters(Params(*runs, "m"), Params(*tasks, "m"));
  ExpectSameParameters(Params(*runs, "m/trial"), Params(*tasks, "m/trial"));
  EXPECT_GT(run->trial_update().simulated_s(), 0);

  TrainRunRequest lopsided = RunOf("m", data, 4, 2, 4);
  lopsided.set_trial_job("m/trial");
  *lopsided.add_trial_steps() = lopsided.steps(0);
  EXPECT_THAT(runs->TrainRun(lopsided).status().message(), HasSubstr("trial_steps has 1 steps"));
}

TEST(GpuRunSyncTest, TheHostWaitsOnceARunAndReadsNoItemInside) {
  const WindowDataset data = Data(6);
  std::vector<std::string> waits;
  GpuExecutor::Options options;
  options.on_host_sync = [&](const std::string& what) { waits.push_back(what); };
  auto e = *GpuExecutor::Create(options);
  ASSERT_TRUE(e->Load(Header("s", data, true), Series(data)).ok());
  ItemCounter items;
  for (int64_t first : {0, 8}) {
    ItemCounter::reset();
    waits.clear();
    absl::StatusOr<TrainRunResponse> run = e->TrainRun(RunOf("s", data, first, 8, 4));
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(ItemCounter::count(), 0) << "item() inside a run of 8 steps";
    EXPECT_EQ(waits.size(), 1u);
    EXPECT_EQ(run->host_syncs(), 1);
  }
  // The same 8 steps as task calls read at least a loss a step.
  ASSERT_TRUE(e->Load(Header("t", data, false), {}).ok());
  ItemCounter::reset();
  TaskSteps(*e, "t", data, 0, 8, 4);
  EXPECT_GE(ItemCounter::count(), 8);
}

TEST(GpuRunRetryTest, ARetriedRunGetsItsAnswerAndTrainsNothingAgain) {
  const WindowDataset data = Data(6);
  auto e = *GpuExecutor::Create({});
  ASSERT_TRUE(e->Load(Header("r", data, true), Series(data)).ok());
  absl::StatusOr<TrainRunResponse> first = e->TrainRun(RunOf("r", data, 0, 4, 4));
  ASSERT_TRUE(first.ok()) << first.status();
  const auto after = Params(*e, "r");
  absl::StatusOr<TrainRunResponse> again = e->TrainRun(RunOf("r", data, 0, 4, 4));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(std::vector<double>(again->losses().begin(), again->losses().end()),
            std::vector<double>(first->losses().begin(), first->losses().end()));
  EXPECT_EQ(again->measured_s(), first->measured_s());
  ExpectSameParameters(Params(*e, "r"), after);
  // A longer run over steps applied: only the new steps train, and the
  // old steps' losses come back as they were.
  absl::StatusOr<TrainRunResponse> longer = e->TrainRun(RunOf("r", data, 2, 4, 4));
  ASSERT_TRUE(longer.ok()) << longer.status();
  EXPECT_EQ(longer->losses(0), first->losses(2));
  EXPECT_EQ(longer->losses(1), first->losses(3));
  auto reference = *GpuExecutor::Create({});
  ASSERT_TRUE(reference->Load(Header("r", data, true), Series(data)).ok());
  ASSERT_TRUE(reference->TrainRun(RunOf("r", data, 0, 6, 4)).ok());
  ExpectSameParameters(Params(*e, "r"), Params(*reference, "r"));
}

TEST(GpuRunDataParallelTest, TwoRanksTrainWhatTheirTaskCallsTrain) {
  // Four ranks in one process share LibTorch's one CPU generator, so
  // dropout is off here (each worker is a process of its own).
  const WindowDataset data = Data(6);
  auto store = RendezvousStore::Start("127.0.0.1");
  ASSERT_TRUE(store.ok()) << store.status();
  std::unique_ptr<GpuExecutor> ranks[2][2];  // [tasks, runs][rank]
  std::vector<double> losses[2][2];
  std::thread threads[2][2];
  for (int mode = 0; mode < 2; ++mode) {
    for (int rank = 0; rank < 2; ++rank) {
      // Runs reduce in 4 KiB buckets during the backward (the tiny model's
      // ~40 KiB of parameters in several), task calls in one flat buffer.
      GpuExecutor::Options options;
      options.allreduce_bucket_bytes = 4 << 10;
      ranks[mode][rank] = *GpuExecutor::Create(options);
      const std::string job = mode == 0 ? "dp-tasks" : "dp-runs";
      ASSERT_TRUE(ranks[mode][rank]
                      ->Load(Header(job, data, mode == 1, "fp32", /*dropout=*/0),
                             mode == 1 ? Series(data) : std::map<std::string, HostTensor>())
                      .ok());
      threads[mode][rank] = std::thread([&, mode, rank, job] {
        ASSERT_TRUE(
            ranks[mode][rank]->JoinGroup(JoinOf(job, rank, 2, (*store)->port(), job + "/")).ok());
        GpuExecutor& e = *ranks[mode][rank];
        if (mode == 0) {
          losses[mode][rank] = TaskSteps(e, job, data, 0, 4, 6, rank, 2);
        } else {
          absl::StatusOr<TrainRunResponse> r = e.TrainRun(RunOf(job, data, 0, 4, 6, rank, 2));
          ASSERT_TRUE(r.ok()) << r.status();
          losses[mode][rank].assign(r->losses().begin(), r->losses().end());
        }
      });
    }
  }
  for (auto& mode : threads) {
    for (auto& t : mode) t.join();
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(losses[1][rank], losses[0][rank]) << "rank " << rank;
    ExpectSameParameters(Params(*ranks[1][rank], "dp-runs"), Params(*ranks[0][rank], "dp-tasks"));
  }
  ExpectSameParameters(Params(*ranks[1][0], "dp-runs"), Params(*ranks[1][1], "dp-runs"));
}

TEST(GpuRunRefusalTest, BadRunsAreRefusedNamingTheFieldAndTrainNothing) {
  const WindowDataset data = Data(6);
  auto e = *GpuExecutor::Create({});
  ASSERT_TRUE(e->Load(Header("plain", data, false), {}).ok());
  absl::Status none = e->TrainRun(RunOf("plain", data, 0, 2, 4)).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.message(), HasSubstr("LoadParametersHeader.samples"));

  ASSERT_TRUE(e->Load(Header("b", data, true), Series(data)).ok());
  const auto before = Params(*e, "b");
  TrainRunRequest far = RunOf("b", data, 0, 2, 4);
  far.mutable_steps(1)->set_samples(0, 1 << 30);
  absl::Status out = e->TrainRun(far).status();
  EXPECT_EQ(out.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.message(), HasSubstr("TrainRunRequest.steps[1].samples"));
  TrainRunRequest small = RunOf("b", data, 0, 2, 4);
  small.mutable_steps(0)->set_global_batch_size(1);
  EXPECT_THAT(e->TrainRun(small).status().message(), HasSubstr("global_batch_size"));
  TrainRunRequest rate = RunOf("b", data, 0, 2, 4);
  rate.mutable_steps(0)->set_learning_rate(-1);
  EXPECT_THAT(e->TrainRun(rate).status().message(), HasSubstr("learning_rate"));
  TrainRunRequest empty = RunOf("b", data, 0, 0, 4);
  EXPECT_THAT(e->TrainRun(empty).status().message(), HasSubstr("steps is empty"));
  ExpectSameParameters(Params(*e, "b"), before);

  LoadParametersHeader wrong = Header("w", data, true);
  wrong.mutable_samples()->set_rows(3);
  absl::Status shape = e->Load(wrong, Series(data)).status();
  EXPECT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shape.message(), HasSubstr("LoadParametersHeader.samples"));
  absl::Status missing = e->Load(Header("m", data, true), {}).status();
  EXPECT_THAT(missing.message(), HasSubstr(kSamplesTensor));
}

TEST(GpuRunReleaseTest, ReleaseDropsTheSamplesAndAReloadKeepsThem) {
  const WindowDataset data = Data(6);
  auto e = *GpuExecutor::Create({});
  ASSERT_TRUE(e->Load(Header("k", data, true), Series(data)).ok());
  // A load of the job without samples (a switch, a checkpoint) keeps them.
  ASSERT_TRUE(e->Load(Header("k", data, false), {}).ok());
  EXPECT_TRUE(e->TrainRun(RunOf("k", data, 0, 2, 4)).ok());
  ASSERT_TRUE(e->Release("k").ok());
  ASSERT_TRUE(e->Load(Header("k", data, false), {}).ok());
  EXPECT_EQ(e->TrainRun(RunOf("k", data, 0, 2, 4)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace hpt
