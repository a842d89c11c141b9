#include "workers/gpu/gpu_executor.h"

#include <torch/torch.h>

#include <thread>

#include "common/tensor_codec.h"
#include "data/synthetic.h"
#include "data/window_dataset.h"
#include "devices/gpu/roofline.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/model_config.h"
#include "models/model_flops.h"
#include "models/st_transformer.h"
#include "workers/gpu/gpu_run_testing.h"
#include "workers/rendezvous_store.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kTokens = 6;
constexpr int64_t kWindow = 8;

LoadParametersHeader Header(const std::string& job, double dropout,
                            double adam_eps = 0) {
  LoadParametersHeader h;
  h.set_job_id(job);
  ModelConfig c = *PresetModelConfig("tiny");
  c.set_input_features(kWindow);
  c.set_output_features(1);
  c.set_dropout(dropout);
  *h.mutable_model() = c;
  h.mutable_optimizer()->set_type(ADAM);
  h.mutable_optimizer()->set_learning_rate(1e-2);
  h.mutable_optimizer()->set_eps(adam_eps);
  h.set_init_seed(123);
  return h;
}

// A batch of `n` synthetic windows starting at sample `first`.
void Batch(int64_t first, int64_t n, HostTensor* x, HostTensor* y) {
  SyntheticOptions so;
  so.stations = kTokens;
  so.time_steps = 200;
  WindowOptions wo;
  wo.input_steps = kWindow;
  wo.train = {0, 200};
  WindowDataset ds = *WindowDataset::Create(MakeSyntheticSeries(so), wo);
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) idx.push_back(first + i);
  ds.Gather(ds.train_starts(), idx, x, y);
}

ForwardRequest TrainForward(const std::string& job, int64_t step,
                            const HostTensor& x, const HostTensor& y) {
  ForwardRequest f;
  f.mutable_key()->set_job_id(job);
  f.mutable_key()->set_step(step);
  f.mutable_key()->set_segment("model");
  ToProto(x, "inputs", f.mutable_inputs());
  ToProto(y, "targets", f.mutable_targets());
  f.set_train(true);
  return f;
}

std::map<std::string, HostTensor> Params(GpuExecutor& e, const std::string& job) {
  auto chunks = e.Snapshot(job, 0);
  EXPECT_TRUE(chunks.ok()) << chunks.status();
  ChunkAssembler a;
  for (const auto& c : *chunks) EXPECT_TRUE(a.Add(c).ok());
  return *a.Finish();
}

double MaxRelDiff(const std::map<std::string, HostTensor>& a,
                  const std::map<std::string, HostTensor>& b) {
  double worst = 0;
  for (const auto& [name, t] : a) {
    const HostTensor& u = b.at(name);
    for (size_t i = 0; i < t.data.size(); ++i) {
      const double denom = std::max(1e-6, double(std::abs(u.data[i])));
      worst = std::max(worst, std::abs(double(t.data[i]) - u.data[i]) / denom);
    }
  }
  return worst;
}

// One full step on `e`: forward, backward, update.
void Step(GpuExecutor& e, const std::string& job, int64_t step,
          const HostTensor& x, const HostTensor& y, int64_t global_batch) {
  ASSERT_TRUE(e.Forward(TrainForward(job, step, x, y)).ok());
  BackwardRequest b;
  *b.mutable_key() = TrainForward(job, step, x, y).key();
  b.set_global_batch_size(global_batch);
  ASSERT_TRUE(e.Backward(b).ok());
  ApplyUpdateRequest u;
  u.set_job_id(job);
  u.set_step(step);
  u.set_learning_rate(1e-2);
  auto applied = e.ApplyUpdate(u);
  ASSERT_TRUE(applied.ok());
  EXPECT_TRUE(applied->applied());
}

class GpuExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    executor_ = *GpuExecutor::Create({});
    ASSERT_TRUE(executor_->Load(Header("j", 0.1), {}).ok());
  }
  std::unique_ptr<GpuExecutor> executor_;
};

TEST_F(GpuExecutorTest, StepMatchesPlainLibTorchStep) {
  HostTensor x, y;
  Batch(0, 4, &x, &y);
  Step(*executor_, "j", 0, x, y, 4);

  // The same step written directly against LibTorch.
  torch::manual_seed(123);
  SpatioTemporalTransformer model(Header("j", 0.1).model());
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-2));
  model->train();
  torch::Tensor tx = torch::from_blob(x.data.data(), x.shape).clone();
  torch::Tensor ty = torch::from_blob(y.data.data(), y.shape).clone();
  torch::manual_seed(GpuExecutor::DropoutSeed(123, 0, 0, 0));  // step 0's masks
  torch::mse_loss(model->forward(tx), ty).backward();
  adam.step();
  std::map<std::string, HostTensor> expected;
  for (const auto& p : model->named_parameters()) {
    HostTensor h(std::vector<int64_t>(p.value().sizes().begin(),
                                      p.value().sizes().end()));
    std::memcpy(h.data.data(), p.value().data_ptr<float>(),
                h.data.size() * sizeof(float));
    expected[p.key()] = h;
  }
  EXPECT_LE(MaxRelDiff(Params(*executor_, "j"), expected), 1e-5);
}

TEST_F(GpuExecutorTest, RetriedUpdateIsNotAppliedTwice) {
  HostTensor x, y;
  Batch(0, 4, &x, &y);
  Step(*executor_, "j", 0, x, y, 4);
  auto before = Params(*executor_, "j");
  ApplyUpdateRequest u;
  u.set_job_id("j");
  u.set_step(0);
  u.set_learning_rate(1e-2);
  auto again = executor_->ApplyUpdate(u);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->applied());
  EXPECT_EQ(MaxRelDiff(Params(*executor_, "j"), before), 0.0);
}

TEST_F(GpuExecutorTest, RetriedBackwardDoesNotDoubleTheGradient) {
  HostTensor x, y;
  Batch(0, 4, &x, &y);
  ForwardRequest f = TrainForward("j", 0, x, y);
  ASSERT_TRUE(executor_->Forward(f).ok());
  BackwardRequest b;
  *b.mutable_key() = f.key();
  auto first = executor_->Backward(b);
  auto second = executor_->Backward(b);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_GT(first->grad_norm(), 0.0);
  EXPECT_EQ(first->grad_norm(), second->grad_norm());
}

TEST_F(GpuExecutorTest, TasksReportTheKernelsTheyRanOnTheReferenceGpu) {
  HostTensor x, y;
  Batch(0, 4, &x, &y);
  auto f = executor_->Forward(TrainForward("j", 0, x, y));
  ASSERT_TRUE(f.ok());
  const auto& fc = f->cost().counters();
  // The forward's products are the model's multiply-adds (checked exactly
  // in kernel_recorder_test); element-wise kernels add their own FLOPs.
  const ModelWork work = ForwardWork(Header("j", 0.1).model(), 4, kTokens, false);
  EXPECT_GE(fc.at("flops"), work.flops);
  EXPECT_GT(fc.at("kernels"), 20);
  // Every kernel pays at least its launch on the V100.
  EXPECT_GE(f->cost().simulated_s(), fc.at("kernels") * 5e-6 - 1e-12);
  EXPECT_LE(fc.at("launch_bound_kernels"), fc.at("kernels"));
  EXPECT_GT(f->cost().energy_j(), 0);
  EXPECT_GT(f->cost().measured_s(), 0);
  BackwardRequest b;
  *b.mutable_key() = TrainForward("j", 0, x, y).key();
  auto back = executor_->Backward(b);
  ASSERT_TRUE(back.ok());
  EXPECT_GT(back->cost().counters().at("kernels"), fc.at("kernels"));
  EXPECT_GT(back->cost().counters().at("flops"), 1.5 * work.flops);
  ApplyUpdateRequest u;
  u.set_job_id("j");
  u.set_step(0);
  u.set_learning_rate(0.01);
  auto update = executor_->ApplyUpdate(u);
  ASSERT_TRUE(update.ok());
  // LibTorch's Adam runs several kernels per parameter tensor.
  EXPECT_GT(update->cost().counters().at("kernels"), 2.0 * double(Params(*executor_, "j").size()));
}

TEST_F(GpuExecutorTest, LoraLoadTrainsOnlyAdaptersAndModulesToSave) {
  HostTensor x, y;
  Batch(0, 4, &x, &y);
  Step(*executor_, "j", 0, x, y, 4);  // the full model moves a little
  auto full = Params(*executor_, "j");
  LoadParametersHeader lora = Header("j", 0.0);
  lora.mutable_lora()->set_enabled(true);
  lora.mutable_lora()->set_auto_rank(true);  // from the change since the first load
  auto loaded = executor_->Load(lora, full);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->lora_ranks().size(), 4u);  // 2 layers x (q, v)
  EXPECT_GE(loaded->lora_ranks().at("layers.0.self_attn.q_proj"), 1);
  EXPECT_LT(loaded->num_trainable(), loaded->num_parameters());
  Step(*executor_, "j", 1, x, y, 4);
  auto after = Params(*executor_, "j");
  // Frozen base weights did not move; modules_to_save did.
  EXPECT_EQ(after.at("layers.0.self_attn.q_proj.weight").data,
            full.at("layers.0.self_attn.q_proj.weight").data);
  EXPECT_NE(after.at("head.weight").data, full.at("head.weight").data);
  EXPECT_EQ(after.count("layers.0.self_attn.lora_q_proj.A.weight"), 1u);
  // A filtered snapshot sends only what is asked for.
  auto some = executor_->Snapshot("j", 0, {"head.weight", "head.bias"});
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->size(), 2u);
}

TEST_F(GpuExecutorTest, WrongInputShapeNamesTheField) {
  HostTensor x({2, kTokens, kWindow + 1}), y({2, kTokens, 1});
  auto r = executor_->Forward(TrainForward("j", 0, x, y));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("ForwardRequest.inputs must have shape [batch, tokens, 8]"));
}

TEST_F(GpuExecutorTest, BackwardWithoutForwardIsFailedPrecondition) {
  BackwardRequest b;
  b.mutable_key()->set_job_id("j");
  b.mutable_key()->set_step(3);
  auto r = executor_->Backward(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("step 3"));
}

TEST_F(GpuExecutorTest, UnknownJobIsFailedPrecondition) {
  auto r = executor_->Snapshot("nope", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(GpuExecutorGlooTest, TwoRanksEqualOneWorkerOnCombinedBatch) {
  // Dropout off: the two replicas would draw different masks than the
  // single worker, which is a property of dropout, not of the averaging.
  // Adam eps 1: Adam's first step is about lr * g / (|g| + eps), a sign
  // function for eps << |g| that turns float-rounding differences of tiny
  // gradients into differences of size lr; with eps 1 the update is smooth
  // in g, so rounding stays rounding.
  constexpr double kEps = 1.0;
  HostTensor x, y, x0, y0, x1, y1;
  Batch(0, 6, &x, &y);
  Batch(0, 4, &x0, &y0);  // uneven shards: 4 + 2
  Batch(4, 2, &x1, &y1);

  auto single = *GpuExecutor::Create({});
  ASSERT_TRUE(single->Load(Header("s", 0.0, kEps), {}).ok());
  Step(*single, "s", 0, x, y, 6);

  auto store = RendezvousStore::Start("127.0.0.1");
  ASSERT_TRUE(store.ok()) << store.status();
  std::unique_ptr<GpuExecutor> ranks[2] = {*GpuExecutor::Create({}),
                                           *GpuExecutor::Create({})};
  for (auto& r : ranks) ASSERT_TRUE(r->Load(Header("dp", 0.0, kEps), {}).ok());
  std::thread threads[2];
  absl::Status join_status[2];
  for (int rank = 0; rank < 2; ++rank) {
    threads[rank] = std::thread([&, rank] {
      join_status[rank] =
          ranks[rank]->JoinGroup(gpu_run_testing::JoinOf("dp", rank, 2, (*store)->port(), "test/"));
      if (!join_status[rank].ok()) return;
      Step(*ranks[rank], "dp", 0, rank == 0 ? x0 : x1, rank == 0 ? y0 : y1, 6);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(join_status[0].ok()) << join_status[0];
  ASSERT_TRUE(join_status[1].ok()) << join_status[1];
  // On CPU the group is Gloo's (NCCL is for CUDA tensors).
  EXPECT_EQ(ranks[0]->CollectiveBackend("dp"), "gloo");
  EXPECT_EQ(single->CollectiveBackend("s"), "");

  auto expected = Params(*single, "s");
  // Float tolerance: the sum of two weighted shard gradients rounds
  // differently from one mean over six samples.
  EXPECT_LE(MaxRelDiff(Params(*ranks[0], "dp"), expected), 1e-5);
  EXPECT_LE(MaxRelDiff(Params(*ranks[1], "dp"), expected), 1e-5);
  // And the step did move the parameters.
  auto fresh = *GpuExecutor::Create({});
  ASSERT_TRUE(fresh->Load(Header("f", 0.0, kEps), {}).ok());
  EXPECT_GT(MaxRelDiff(Params(*fresh, "f"), expected), 1e-4);
  EXPECT_EQ(MaxRelDiff(Params(*ranks[0], "dp"), Params(*ranks[1], "dp")), 0.0);
}

TEST(GpuExecutorGlooTest, AFailedJoinLeavesTheWorkerServingTheNextJob) {
  // A group whose store is gone (or, on a GPU, whose ranks NCCL refuses)
  // fails the join with a status; the executor stays whole and trains the
  // next job.
  auto executor = *GpuExecutor::Create({});
  ASSERT_TRUE(executor->Load(Header("doomed", 0.0), {}).ok());
  int closed_port = 0;
  {
    auto store = RendezvousStore::Start("127.0.0.1");
    ASSERT_TRUE(store.ok()) << store.status();
    closed_port = (*store)->port();
  }  // the store stops: nothing listens there now
  JoinGroupRequest j = gpu_run_testing::JoinOf("doomed", 1, 2, closed_port, "gone/");
  j.set_timeout_s(1);
  absl::Status joined = executor->JoinGroup(j);
  EXPECT_FALSE(joined.ok());
  EXPECT_NE(joined.message().find("JoinGroup"), std::string::npos) << joined;
  EXPECT_EQ(executor->CollectiveBackend("doomed"), "");
  ASSERT_TRUE(executor->Release("doomed").ok());
  ASSERT_TRUE(executor->Load(Header("next", 0.0), {}).ok());
  HostTensor x, y;
  Batch(0, 4, &x, &y);
  Step(*executor, "next", 0, x, y, 4);
}

TEST(GpuExecutorGlooTest, AnUnknownBackendIsRefusedNamingTheField) {
  auto executor = *GpuExecutor::Create({});
  ASSERT_TRUE(executor->Load(Header("b", 0.0), {}).ok());
  JoinGroupRequest j;
  j.set_job_id("b");
  j.set_world_size(1);
  j.set_store_host("127.0.0.1");
  j.set_store_port(1);
  j.set_backend("mpi");
  absl::Status joined = executor->JoinGroup(j);
  EXPECT_EQ(joined.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(joined.message().find("JoinGroupRequest.backend 'mpi'"), std::string::npos) << joined;
}

TEST(GpuExecutorDeviceTest, DeviceIdIsTheOneGivenElseNoneOnTheCpu) {
  EXPECT_EQ((*GpuExecutor::Create({}))->device_id(), "");
  GpuExecutor::Options options;
  options.device_id = "one-gpu";
  EXPECT_EQ((*GpuExecutor::Create(options))->device_id(), "one-gpu");
}

}  // namespace
}  // namespace hpt
