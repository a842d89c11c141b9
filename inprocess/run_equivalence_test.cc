// Runs change nothing a job computes: the same job trained with its GPU
// steps as runs (TrainRun) and task by task (forward, backward, update
// calls) takes the same losses at every step, the same phase decisions
// and switch step, and ends with the same model and test metrics: one GPU
// worker and two data-parallel ones (Gloo), the paper's rule with its
// trial, the default rule, a LoRA phase on the GPU and on the devices, and
// checkpoints every few steps.
#include <map>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/training/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "inprocess/in_process_workers.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/rendezvous_store.h"

namespace hpt {
namespace {

// A local client that counts the runs and task calls it passes on.
class CountingClient : public LocalWorkerClient {
 public:
  using LocalWorkerClient::LocalWorkerClient;
  absl::StatusOr<TrainRunResponse> TrainRun(const TrainRunRequest& request) override {
    ++runs;
    run_steps += request.steps_size();
    return LocalWorkerClient::TrainRun(request);
  }
  // Two workers in one process seed LibTorch's one CPU generator: their
  // loads (each initialises its model from the job's seed) go one at a
  // time, as separate processes' would be apart.
  absl::StatusOr<LoadParametersResponse> LoadParameters(
      const LoadParametersHeader& header, const std::vector<TensorChunk>& chunks) override {
    static absl::Mutex loading;
    absl::MutexLock lock(&loading);
    return LocalWorkerClient::LoadParameters(header, chunks);
  }
  absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& request) override {
    if (request.train()) ++forwards;
    return LocalWorkerClient::Forward(request);
  }
  int runs = 0, run_steps = 0, forwards = 0;
};

struct Case {
  std::string rule, placement;
  int gpu_workers = 1;
  int64_t checkpoint_every = 0;
  Launch::Mode launch = Launch::eager;
  bool twin = false;  // graph steps run uncaptured on the CPU (step_graph.h)
};

struct Outcome {
  absl::Status status;
  std::map<int64_t, double> losses;  // step -> loss (as the history keeps it)
  TrainerUpdate last;
  TrainedModel model;
  int checkpoints = 0, runs = 0, run_steps = 0, forwards = 0;
};

Outcome Train(const Case& c, bool runs) {
  std::unique_ptr<WindowDataset> data = SmallSyntheticWindows(6);
  JobSpec spec;
  spec.mutable_model()->set_preset("tiny");
  // Two ranks in one process share LibTorch's CPU generator: no dropout.
  spec.mutable_model()->set_dropout(0);
  spec.mutable_model()->set_dropout_set(true);
  spec.mutable_training()->set_epochs(6);
  spec.mutable_training()->set_batch_size(12);
  spec.mutable_training()->mutable_optimizer()->set_learning_rate(0.003);
  spec.mutable_training()->set_step_lr_step_size(2);
  spec.mutable_training()->set_step_lr_gamma(0.5);
  spec.mutable_training()->set_launch(c.launch);
  spec.mutable_placement()->set_gpu_workers(c.gpu_workers);
  HptSpec& h = *spec.mutable_hpt();
  h.set_check_window_steps(4);
  h.set_loss_threshold(0.9);
  h.set_weight_threshold(0.9);
  EXPECT_TRUE(SetRuleName(c.rule, h).ok()) << c.rule;
  h.set_placement(PlacementNamed(c.placement));
  h.mutable_lora()->set_rank(2);
  h.mutable_lora()->set_dropout(0);
  h.mutable_lora()->set_dropout_set(true);
  absl::StatusOr<JobSpec> normalized = NormalizeJobSpec(spec);
  EXPECT_TRUE(normalized.ok()) << normalized.status();

  InProcessWorkers devices;
  GpuExecutor::Options g;
  g.device = "cpu";
  g.uncaptured_graphs = c.twin;
  std::vector<std::unique_ptr<GpuExecutor>> gpus;
  std::vector<std::unique_ptr<CountingClient>> clients;
  std::vector<WorkerClient*> workers;
  for (int i = 0; i < c.gpu_workers; ++i) {
    gpus.push_back(*GpuExecutor::Create(g));
    clients.push_back(std::make_unique<CountingClient>("gpu" + std::to_string(i), gpus.back().get()));
    workers.push_back(clients.back().get());
  }
  std::unique_ptr<RendezvousStore> store;
  Outcome out;
  Trainer::Options options = devices.Options();
  if (c.gpu_workers > 1) {
    store = *RendezvousStore::Start("127.0.0.1");
    options.rendezvous = store.get();
  }
  options.runs = runs;
  options.checkpoint_every = c.checkpoint_every;
  options.on_checkpoint = [&](Checkpoint) { ++out.checkpoints; };
  options.on_progress = [&](const TrainerUpdate& u) { out.last = u; };
  Trainer trainer("j", *normalized, data.get(), workers, options);
  out.status = trainer.Run();
  const LossHistory history = out.last.history->ToProto();
  for (int i = 0; i < history.step_losses_size(); ++i) out.losses[i] = history.step_losses(i);
  if (out.status.ok()) out.model = trainer.trained_model();
  for (const auto& client : clients) {
    out.runs += client->runs;
    out.run_steps += client->run_steps;
    out.forwards += client->forwards;
  }
  return out;
}

class RunEquivalenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(RunEquivalenceTest, RunsTrainWhatTaskCallsTrain) {
  const Outcome tasks = Train(GetParam(), /*runs=*/false);
  const Outcome runs = Train(GetParam(), /*runs=*/true);
  ASSERT_TRUE(tasks.status.ok()) << tasks.status;
  ASSERT_TRUE(runs.status.ok()) << runs.status;
  // Runs were taken, and they span several steps each.
  EXPECT_EQ(tasks.runs, 0);
  EXPECT_GT(runs.runs, 0);
  EXPECT_GT(runs.run_steps, 2 * runs.runs);
  EXPECT_LT(runs.forwards, tasks.forwards);

  ASSERT_EQ(runs.losses.size(), tasks.losses.size());
  for (const auto& [step, loss] : tasks.losses) {
    ASSERT_TRUE(runs.losses.count(step)) << step;
    EXPECT_NEAR(runs.losses.at(step), loss, 1e-6 * std::abs(loss)) << "step " << step;
  }
  const HptStatus& a = tasks.last.hpt;
  const HptStatus& b = runs.last.hpt;
  EXPECT_EQ(b.switch_step(), a.switch_step());
  EXPECT_EQ(b.phase(), a.phase());
  ASSERT_EQ(b.events_size(), a.events_size());
  for (int i = 0; i < a.events_size(); ++i) {
    EXPECT_EQ(b.events(i).kind(), a.events(i).kind()) << i;
    EXPECT_EQ(b.events(i).iteration(), a.events(i).iteration()) << i;
    EXPECT_EQ(b.events(i).reason(), a.events(i).reason()) << i;
  }
  EXPECT_EQ(runs.checkpoints, tasks.checkpoints);
  // The report says how each phase's steps went: all task by task, or
  // mostly in runs (a run of one step goes task by task).
  ASSERT_GE(a.dispatch_size(), 1);
  ASSERT_EQ(b.dispatch_size(), a.dispatch_size());
  for (int i = 0; i < a.dispatch_size(); ++i) {
    EXPECT_EQ(a.dispatch(i).runs(), 0);
    EXPECT_EQ(b.dispatch(i).phase(), a.dispatch(i).phase());
    EXPECT_EQ(b.dispatch(i).run_steps() + b.dispatch(i).task_steps(), a.dispatch(i).task_steps());
    EXPECT_GT(b.dispatch(i).run_steps(), b.dispatch(i).task_steps());
    EXPECT_EQ(b.dispatch(i).launch(), Launch::eager);
  }
  EXPECT_EQ(a.dispatch(0).phase(), TrainingPhase::full);
  EXPECT_EQ(a.dispatch(0).task_steps(), a.switch_step() > 0 ? a.switch_step()
                                                             : tasks.last.progress.step());
  EXPECT_NEAR(runs.last.test_metrics.rmse(), tasks.last.test_metrics.rmse(),
              1e-6 * tasks.last.test_metrics.rmse());
  ASSERT_EQ(runs.model.parameters.size(), tasks.model.parameters.size());
  for (const auto& [name, t] : tasks.model.parameters) {
    const HostTensor& u = runs.model.parameters.at(name);
    ASSERT_EQ(u.data.size(), t.data.size()) << name;
    for (size_t i = 0; i < t.data.size(); ++i) {
      ASSERT_NEAR(u.data[i], t.data[i], 1e-6 * (1 + std::abs(t.data[i]))) << name << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, RunEquivalenceTest,
    ::testing::Values(Case{"paper", "gpu", 1, 0}, Case{"paper", "paper", 1, 5},
                      Case{"plateau", "gpu", 1, 0}, Case{"paper", "gpu", 2, 6}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return info.param.rule + "_" + info.param.placement + "_" +
             std::to_string(info.param.gpu_workers) + "gpu_checkpoint" +
             std::to_string(info.param.checkpoint_every);
    });

TEST(RunLaunchTest, AGraphJobOnCpuWorkersTrainsEagerAndTheReportSaysWhy) {
  Case graph{"paper", "gpu", 1, 0};
  graph.launch = Launch::graph;
  const Outcome eager = Train(Case{"paper", "gpu", 1, 0}, /*runs=*/true);
  const Outcome asked = Train(graph, /*runs=*/true);
  ASSERT_TRUE(eager.status.ok()) << eager.status;
  ASSERT_TRUE(asked.status.ok()) << asked.status;
  EXPECT_EQ(asked.losses, eager.losses);
  EXPECT_EQ(asked.last.hpt.switch_step(), eager.last.hpt.switch_step());
  ASSERT_EQ(asked.last.hpt.dispatch_size(), 2);
  for (const PhaseDispatch& d : asked.last.hpt.dispatch()) {
    EXPECT_EQ(d.launch(), Launch::eager) << d.phase();
    EXPECT_THAT(d.launch_note(), ::testing::HasSubstr("no CUDA device")) << d.phase();
  }
}

TEST(RunLaunchTest, GraphStepsSwitchWhereEagerStepsSwitch) {
  // The CPU twin of graph steps: the trial's copy and the LoRA phase on
  // the GPU worker take graphs too, and the phase controller decides as
  // it does for eager steps, with losses within the fused Adam's rounding.
  Case twin{"paper", "gpu", 1, 0};
  twin.launch = Launch::graph;
  twin.twin = true;
  const Outcome eager = Train(Case{"paper", "gpu", 1, 0}, /*runs=*/true);
  const Outcome graph = Train(twin, /*runs=*/true);
  ASSERT_TRUE(eager.status.ok()) << eager.status;
  ASSERT_TRUE(graph.status.ok()) << graph.status;
  ASSERT_GT(eager.last.hpt.switch_step(), 0);
  EXPECT_EQ(graph.last.hpt.switch_step(), eager.last.hpt.switch_step());
  ASSERT_EQ(graph.losses.size(), eager.losses.size());
  for (const auto& [step, loss] : eager.losses) {
    EXPECT_NEAR(graph.losses.at(step), loss, 1e-4 * std::abs(loss)) << "step " << step;
  }
  ASSERT_EQ(graph.last.hpt.dispatch_size(), 2);
  for (const PhaseDispatch& d : graph.last.hpt.dispatch()) {
    EXPECT_EQ(d.launch(), Launch::graph) << d.phase();
  }
}

}  // namespace
}  // namespace hpt
