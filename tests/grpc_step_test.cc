// One training step sent over gRPC to a worker equals the same step taken
// in one process with plain LibTorch; parameters loaded in small chunks
// come back bit for bit.
#include <torch/torch.h>

#include <cstring>

#include "common/tensor_codec.h"
#include "coordinator/dispatch/grpc_worker_client.h"
#include "data/synthetic.h"
#include "data/window_dataset.h"
#include "gtest/gtest.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/main/worker_backend.h"

namespace hpt {
namespace {

constexpr uint64_t kSeed = 2024;

ModelConfig Config() {
  ModelConfig c = *PresetModelConfig("tiny");
  c.set_input_features(12);
  c.set_output_features(1);
  c.set_dropout(0.1);  // the same seed must give the same masks
  return c;
}

std::map<std::string, HostTensor> ToHost(SpatioTemporalTransformer& model) {
  std::map<std::string, HostTensor> out;
  for (const auto& p : model->named_parameters()) {
    torch::Tensor t = p.value().detach().contiguous();
    HostTensor h(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
    std::memcpy(h.data.data(), t.data_ptr<float>(), h.data.size() * sizeof(float));
    out[p.key()] = std::move(h);
  }
  return out;
}

std::map<std::string, HostTensor> Assemble(const std::vector<TensorChunk>& chunks) {
  ChunkAssembler a;
  for (const TensorChunk& c : chunks) EXPECT_TRUE(a.Add(c).ok());
  return *a.Finish();
}

class GrpcStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WorkerServer::Options o;
    o.listen_address = "127.0.0.1:0";
    auto server = StartWorker(o, WorkerBackendOptions());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = std::make_unique<GrpcWorkerClient>(server_->address(),
                                                 GrpcWorkerClient::Options());
    SyntheticOptions so;
    so.stations = 10;
    so.time_steps = 120;
    WindowOptions wo;
    wo.input_steps = 12;
    wo.train = {0, 120};
    WindowDataset ds = *WindowDataset::Create(MakeSyntheticSeries(so), wo);
    ds.Gather(ds.train_starts(), {3, 17, 40, 41, 90, 5}, &x_, &y_);
  }

  LoadParametersHeader Header() {
    LoadParametersHeader h;
    h.set_job_id("step");
    *h.mutable_model() = Config();
    h.mutable_optimizer()->set_type(ADAMW);
    h.mutable_optimizer()->set_learning_rate(3e-3);
    h.mutable_optimizer()->set_weight_decay(0.01);
    h.set_init_seed(kSeed);
    return h;
  }

  std::unique_ptr<WorkerServer> server_;
  std::unique_ptr<GrpcWorkerClient> client_;
  HostTensor x_, y_;
};

TEST_F(GrpcStepTest, StepOverGrpcEqualsSingleProcessStep) {
  ASSERT_TRUE(client_->LoadParameters(Header(), {}).ok());
  ForwardRequest f;
  f.mutable_key()->set_job_id("step");
  f.mutable_key()->set_segment("model");
  ToProto(x_, "inputs", f.mutable_inputs());
  ToProto(y_, "targets", f.mutable_targets());
  f.set_train(true);
  auto forward = client_->Forward(f);
  ASSERT_TRUE(forward.ok()) << forward.status();
  BackwardRequest b;
  *b.mutable_key() = f.key();
  b.set_global_batch_size(6);
  ASSERT_TRUE(client_->Backward(b).ok());
  ApplyUpdateRequest u;
  u.set_job_id("step");
  u.set_learning_rate(3e-3);
  auto update = client_->ApplyUpdate(u);
  ASSERT_TRUE(update.ok());
  EXPECT_TRUE(update->applied());
  auto chunks = client_->Snapshot("step", {});
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  std::map<std::string, HostTensor> remote = Assemble(*chunks);

  // The same step in this process: same seed, same batch, AdamW.
  torch::manual_seed(kSeed);
  SpatioTemporalTransformer model(Config());
  torch::optim::AdamW opt(model->parameters(),
                          torch::optim::AdamWOptions(3e-3).weight_decay(0.01));
  model->train();
  torch::Tensor tx = torch::from_blob(x_.data.data(), x_.shape).clone();
  torch::Tensor ty = torch::from_blob(y_.data.data(), y_.shape).clone();
  torch::manual_seed(GpuExecutor::DropoutSeed(kSeed, 0, 0, 0));  // step 0's masks
  torch::Tensor loss = torch::mse_loss(model->forward(tx), ty);
  EXPECT_NEAR(forward->loss(), loss.item<double>(), 1e-6);
  loss.backward();
  opt.step();
  std::map<std::string, HostTensor> local = ToHost(model);

  ASSERT_EQ(remote.size(), local.size());
  double worst = 0;
  for (const auto& [name, t] : local) {
    const HostTensor& r = remote.at(name);
    ASSERT_EQ(r.shape, t.shape) << name;
    for (size_t i = 0; i < t.data.size(); ++i) {
      const double denom = std::max(1e-6, double(std::abs(t.data[i])));
      worst = std::max(worst, std::abs(double(r.data[i]) - t.data[i]) / denom);
    }
  }
  // Stated tolerance: max relative difference 1e-5.
  EXPECT_LE(worst, 1e-5);
}

TEST_F(GrpcStepTest, ChunkedParametersRoundTrip) {
  // Parameters from another seed, streamed in 4 KiB chunks (many per tensor).
  torch::manual_seed(99);
  SpatioTemporalTransformer source(Config());
  std::map<std::string, HostTensor> sent = ToHost(source);
  std::vector<TensorChunk> chunks;
  for (const auto& [name, t] : sent) {
    for (TensorChunk& c : SplitIntoChunks(name, t.shape, t.data.data(), 4096)) {
      chunks.push_back(std::move(c));
    }
  }
  ASSERT_GT(chunks.size(), sent.size());
  auto loaded = client_->LoadParameters(Header(), chunks);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->num_tensors(), static_cast<int64_t>(sent.size()));
  auto back = client_->Snapshot("step", {});
  ASSERT_TRUE(back.ok());
  std::map<std::string, HostTensor> received = Assemble(*back);
  for (const auto& [name, t] : sent) EXPECT_EQ(received.at(name).data, t.data) << name;
}

TEST_F(GrpcStepTest, WrongShapeIsInvalidArgumentAndWorkerKeepsServing) {
  ASSERT_TRUE(client_->LoadParameters(Header(), {}).ok());
  ForwardRequest f;
  f.mutable_key()->set_job_id("step");
  HostTensor bad({2, 10, 5});
  ToProto(bad, "inputs", f.mutable_inputs());
  auto r = client_->Forward(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("ForwardRequest.inputs"), std::string::npos);
  f.set_train(false);
  ToProto(x_, "inputs", f.mutable_inputs());
  f.set_return_outputs(true);
  auto ok = client_->Forward(f);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->outputs().shape_size(), 3);
  EXPECT_EQ(ok->outputs().shape(0), 6);
}

}  // namespace
}  // namespace hpt
