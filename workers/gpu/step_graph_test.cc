// `launch: graph` on a GPU worker without a GPU: a CPU worker says why its
// steps ran eager and trains the same bits as eager; the CPU twin of the
// CUDA path (the graph's body run uncaptured each step) trains what eager
// steps train, up to ATen's fused Adam's rounding, through shapes that
// interleave, a trial beside the model, AdamW and bf16, and still waits
// for the device once a run. The capture itself needs CUDA:
// tools/gpu_check.sh runs it where a GPU is lent.
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/gpu/gpu_run_testing.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;
using namespace gpu_run_testing;

std::vector<double> Losses(const TrainRunResponse& r) {
  return {r.losses().begin(), r.losses().end()};
}

TEST(StepGraphTest, OnACpuWorkerGraphRunsEagerAndSaysWhy) {
  const WindowDataset data = Data(6);
  auto eager = *GpuExecutor::Create({});
  auto graph = *GpuExecutor::Create({});
  ASSERT_TRUE(eager->Load(Header("j", data, true), Series(data)).ok());
  ASSERT_TRUE(graph->Load(Header("j", data, true), Series(data)).ok());
  absl::StatusOr<TrainRunResponse> e = eager->TrainRun(RunOf("j", data, 0, 6, 4));
  absl::StatusOr<TrainRunResponse> g = graph->TrainRun(GraphRunOf("j", data, 0, 6, 4));
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(e->launch(), Launch::eager);
  EXPECT_EQ(e->launch_note(), "");
  EXPECT_EQ(g->launch(), Launch::eager);
  EXPECT_THAT(g->launch_note(), HasSubstr("no CUDA device"));
  EXPECT_EQ(Losses(*g), Losses(*e));
  ExpectSameParameters(Params(*graph, "j"), Params(*eager, "j"));
}

struct TwinCase {
  std::string precision;
  OptimizerType optimizer;
  double weight_decay;
};

class StepGraphTwinTest : public ::testing::TestWithParam<TwinCase> {};

TEST_P(StepGraphTwinTest, TheTwinTrainsWhatEagerStepsTrain) {
  const TwinCase& c = GetParam();
  const WindowDataset data = Data(6);
  GpuExecutor::Options twin;
  twin.uncaptured_graphs = true;
  std::vector<std::string> waits;
  twin.on_host_sync = [&](const std::string& what) { waits.push_back(what); };
  auto eager = *GpuExecutor::Create({});
  auto graph = *GpuExecutor::Create(twin);
  LoadParametersHeader h = Header("j", data, true, c.precision);
  h.mutable_optimizer()->set_type(c.optimizer);
  h.mutable_optimizer()->set_weight_decay(c.weight_decay);
  ASSERT_TRUE(eager->Load(h, Series(data)).ok());
  ASSERT_TRUE(graph->Load(h, Series(data)).ok());

  // A first run of one step: the shape's eager step, nothing replayed.
  absl::StatusOr<TrainRunResponse> first = graph->TrainRun(GraphRunOf("j", data, 0, 1, 4));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->launch(), Launch::eager);
  EXPECT_THAT(first->launch_note(), HasSubstr("trains eagerly once"));
  absl::StatusOr<TrainRunResponse> rest = graph->TrainRun(GraphRunOf("j", data, 1, 7, 4));
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->launch(), Launch::graph);
  EXPECT_EQ(rest->launch_note(), "");
  EXPECT_EQ(waits.size(), 2u) << "one wait a run";
  // Costed from the shape's eager step, as every run step is.
  EXPECT_GT(rest->forward().simulated_s(), 0);
  EXPECT_GT(rest->update().work().optimizer_numel_size(), 0);

  absl::StatusOr<TrainRunResponse> reference = eager->TrainRun(RunOf("j", data, 0, 8, 4));
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(first->losses(0), reference->losses(0)) << "the eager first step";
  for (int j = 1; j < 8; ++j) {
    EXPECT_NEAR(rest->losses(j - 1), reference->losses(j), 1e-5 * reference->losses(j))
        << "step " << j;
  }
  // The fused step moved the parameters and the optimizer's own moments
  // (a checkpoint reads those) as eager Adam did.
  ExpectClose(Params(*graph, "j"), Params(*eager, "j"), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, StepGraphTwinTest,
    ::testing::Values(TwinCase{"fp32", ADAM, 0}, TwinCase{"bf16", ADAM, 0},
                      TwinCase{"fp32", ADAMW, 0.01}, TwinCase{"fp32", ADAM, 0.01}),
    [](const ::testing::TestParamInfo<TwinCase>& info) {
      return info.param.precision + "_" + OptimizerType_Name(info.param.optimizer) + "_wd" +
             std::to_string(int(info.param.weight_decay * 100));
    });

TEST(StepGraphTwinTest, ShapesThatInterleaveKeepAdamsStepCounts) {
  // Batch 4 (eager, then graph), batch 3 (a new shape: eager once, then
  // graph), batch 4 again: its graph's step counts must have moved with
  // the eager steps between, or its bias correction would be a step late.
  const WindowDataset data = Data(6);
  GpuExecutor::Options twin;
  twin.uncaptured_graphs = true;
  auto eager = *GpuExecutor::Create({});
  auto graph = *GpuExecutor::Create(twin);
  ASSERT_TRUE(eager->Load(Header("j", data, true), Series(data)).ok());
  ASSERT_TRUE(graph->Load(Header("j", data, true), Series(data)).ok());
  std::vector<double> graph_losses, eager_losses;
  int64_t step = 0;
  for (auto [steps, batch] : std::vector<std::pair<int64_t, int64_t>>{{3, 4}, {3, 3}, {3, 4}}) {
    absl::StatusOr<TrainRunResponse> g = graph->TrainRun(GraphRunOf("j", data, step, steps, batch));
    absl::StatusOr<TrainRunResponse> e = eager->TrainRun(RunOf("j", data, step, steps, batch));
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(g->launch(), Launch::graph) << "run at step " << step;
    for (int j = 0; j < g->losses_size(); ++j) {
      EXPECT_NEAR(g->losses(j), e->losses(j), 1e-5 * e->losses(j)) << "step " << step + j;
    }
    step += steps;
  }
  ExpectClose(Params(*graph, "j"), Params(*eager, "j"), 1e-4);
}

TEST(StepGraphTwinTest, ATrialTrainsByItsOwnGraphBesideTheModel) {
  const WindowDataset data = Data(6);
  GpuExecutor::Options twin;
  twin.uncaptured_graphs = true;
  auto eager = *GpuExecutor::Create({});
  auto graph = *GpuExecutor::Create(twin);
  LoadParametersHeader trial = Header("m/trial", data, false);
  trial.set_init_seed(8);
  for (GpuExecutor* e : {eager.get(), graph.get()}) {
    ASSERT_TRUE(e->Load(Header("m", data, true), Series(data)).ok());
    ASSERT_TRUE(e->Load(trial, {}).ok());
  }
  auto with_trial = [&](TrainRunRequest r) {
    r.set_trial_job("m/trial");
    for (const RunStep& step : r.steps()) *r.add_trial_steps() = step;
    return r;
  };
  absl::StatusOr<TrainRunResponse> g = graph->TrainRun(with_trial(GraphRunOf("m", data, 0, 6, 4)));
  absl::StatusOr<TrainRunResponse> e = eager->TrainRun(with_trial(RunOf("m", data, 0, 6, 4)));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(g->launch(), Launch::graph);
  ASSERT_EQ(g->trial_losses_size(), 6);
  for (int j = 0; j < 6; ++j) {
    EXPECT_NEAR(g->trial_losses(j), e->trial_losses(j), 1e-5 * e->trial_losses(j)) << j;
  }
  ExpectClose(Params(*graph, "m"), Params(*eager, "m"), 1e-4);
  ExpectClose(Params(*graph, "m/trial"), Params(*eager, "m/trial"), 1e-4);
}

}  // namespace
}  // namespace hpt
