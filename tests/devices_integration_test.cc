// One worker of each kind as real processes. A linear layer's forward and
// backward through the ReRAM and systolic workers match LibTorch within the
// devices' stated error; jobs whose output head runs on those workers
// succeed, and the devices' cost reports reach the coordinator.
#include <torch/torch.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/device_kind.h"
#include "common/grpc_setup.h"
#include "common/tensor_codec.h"
#include "common/test_util.h"
#include "coordinator/dispatch/grpc_worker_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/job_service.grpc.pb.h"

namespace hpt {
namespace {

using testing::ChildProcess;
using testing::RunfilePath;

constexpr int64_t kRows = 12, kIn = 40, kOut = 24;

class DevicesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("devices"));
    auto c = ChildProcess::Start(
        {RunfilePath("coordinator/hpt_coordinator"), "--listen=127.0.0.1:0",
         "--metrics=", "--port_file=" + *dir_ + "/c.port",
         "--state_dir=" + *dir_ + "/state"},
        *dir_ + "/c.log");
    ASSERT_TRUE(c.ok());
    coordinator_ = new ChildProcess(std::move(*c));
    auto cp = testing::WaitForPortFile(*dir_ + "/c.port", *coordinator_, absl::Seconds(60));
    ASSERT_TRUE(cp.ok()) << cp.status();
    coordinator_port_ = cp->grpc;
    // The ReRAM worker's ADC resolves every sum (9 bits for 128 rows of
    // 2-bit cells), so its stated error is the 8-bit quantisation bound.
    const std::vector<std::vector<std::string>> kinds = {
        {"gpu"}, {"reram", "--reram_adc_bits=9"}, {"systolic", "--systolic_rows=16",
                                                   "--systolic_cols=16"}};
    for (size_t i = 0; i < kinds.size(); ++i) {
      std::vector<std::string> argv = {RunfilePath("workers/main/hpt_worker"),
                                       "--kind=" + kinds[i][0],
                                       "--listen=127.0.0.1:0",
                                       "--metrics=",
                                       "--threads=1",
                                       absl::StrCat("--coordinator=127.0.0.1:", coordinator_port_),
                                       "--port_file=" + *dir_ + "/" + kinds[i][0] + ".port"};
      argv.insert(argv.end(), kinds[i].begin() + 1, kinds[i].end());
      auto w = ChildProcess::Start(argv, *dir_ + "/" + kinds[i][0] + ".log");
      ASSERT_TRUE(w.ok());
      workers_[i] = new ChildProcess(std::move(*w));
      auto p = testing::WaitForPortFile(*dir_ + "/" + kinds[i][0] + ".port", *workers_[i],
                                        absl::Seconds(60));
      ASSERT_TRUE(p.ok()) << p.status();
      ports_[i] = p->grpc;
    }
  }

  static void TearDownTestSuite() {
    for (ChildProcess*& w : workers_) {
      delete w;
      w = nullptr;
    }
    delete coordinator_;
  }

  static std::string* dir_;
  static ChildProcess* coordinator_;
  static ChildProcess* workers_[3];
  static int coordinator_port_;
  static int ports_[3];
};

std::string* DevicesTest::dir_ = nullptr;
ChildProcess* DevicesTest::coordinator_ = nullptr;
ChildProcess* DevicesTest::workers_[3] = {nullptr, nullptr, nullptr};
int DevicesTest::coordinator_port_ = 0;
int DevicesTest::ports_[3] = {0, 0, 0};

HostTensor FromTorch(const torch::Tensor& t) {
  torch::Tensor c = t.detach().contiguous();
  HostTensor h(std::vector<int64_t>(c.sizes().begin(), c.sizes().end()));
  std::memcpy(h.data.data(), c.data_ptr<float>(), h.data.size() * sizeof(float));
  return h;
}

struct LinearResult {
  HostTensor y, grad_x;
  CostReport forward_cost, backward_cost;
  LoadParametersResponse loaded;
};

// Loads one LINEAR op on the worker, runs forward on x and backward with g.
LinearResult RunLinear(int port, const torch::Tensor& w, const torch::Tensor& b,
                       const torch::Tensor& x, const torch::Tensor& g) {
  GrpcWorkerClient client(absl::StrCat("127.0.0.1:", port), {});
  LoadParametersHeader header;
  header.set_job_id("linear");
  header.mutable_optimizer()->set_learning_rate(1e-3);
  header.mutable_segment()->set_name("s");
  SegmentOp* op = header.mutable_segment()->add_ops();
  op->set_type(SegmentOp::LINEAR);
  op->set_weight("w");
  op->set_bias("b");
  std::vector<TensorChunk> chunks;
  for (auto& [name, t] : std::vector<std::pair<std::string, HostTensor>>{
           {"w", FromTorch(w)}, {"b", FromTorch(b)}}) {
    for (TensorChunk& c : SplitIntoChunks(name, t.shape, t.data.data(), 0)) {
      chunks.push_back(std::move(c));
    }
  }
  LinearResult r;
  auto loaded = client.LoadParameters(header, chunks);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  r.loaded = *loaded;
  ForwardRequest f;
  f.mutable_key()->set_job_id("linear");
  f.mutable_key()->set_segment("s");
  ToProto(FromTorch(x), "inputs", f.mutable_inputs());
  f.set_train(true);
  auto forward = client.Forward(f);
  EXPECT_TRUE(forward.ok()) << forward.status();
  r.y = *FromProto(forward->outputs(), "y");
  r.forward_cost = forward->cost();
  BackwardRequest bw;
  *bw.mutable_key() = f.key();
  ToProto(FromTorch(g), "grad_output", bw.mutable_grad_output());
  auto backward = client.Backward(bw);
  EXPECT_TRUE(backward.ok()) << backward.status();
  r.grad_x = *FromProto(backward->grad_input(), "gx");
  r.backward_cost = backward->cost();
  return r;
}

TEST_F(DevicesTest, LinearForwardAndBackwardMatchLibTorch) {
  torch::manual_seed(5);
  torch::nn::Linear linear(kIn, kOut);
  torch::Tensor x = torch::randn({kRows, kIn}, torch::requires_grad());
  torch::Tensor g = torch::randn({kRows, kOut});
  torch::Tensor y = linear->forward(x);
  y.backward(g);
  const torch::Tensor w = linear->weight, b = linear->bias;

  // Systolic, fp32: equal up to float summation order.
  LinearResult s = RunLinear(ports_[2], w, b, x, g);
  const torch::Tensor sy = torch::from_blob(s.y.data.data(), {kRows, kOut});
  const torch::Tensor sg = torch::from_blob(s.grad_x.data.data(), {kRows, kIn});
  EXPECT_LT((sy - y).abs().max().item<float>(), 1e-5);
  EXPECT_LT((sg - x.grad()).abs().max().item<float>(), 1e-5);
  EXPECT_EQ(s.forward_cost.device_kind(), DeviceKind::systolic);
  EXPECT_DOUBLE_EQ(s.forward_cost.counters().at("macs"), kRows * kIn * kOut);
  EXPECT_DOUBLE_EQ(s.backward_cost.counters().at("macs"), kRows * kIn * kOut);

  // ReRAM: the 8-bit quantisation bound, per element, as the device states
  // it: |dy| <= sum_i |x_i| s_w / 2 + |w_i| s_x / 2 + s_w s_x / 4.
  LinearResult r = RunLinear(ports_[1], w, b, x, g);
  const double s_w = w.abs().max().item<double>() / 127;
  auto bound = [&](const torch::Tensor& in, const torch::Tensor& weights) {
    const double s_in = in.abs().max().item<double>() / 127;
    return (torch::matmul(in.abs(), weights.abs().t()) * (s_w / 2) +
            weights.abs().sum(1) * (s_in / 2) + weights.size(1) * s_w * s_in / 4)
        .detach();
  };
  const torch::Tensor ry = torch::from_blob(r.y.data.data(), {kRows, kOut});
  const torch::Tensor rg = torch::from_blob(r.grad_x.data.data(), {kRows, kIn});
  EXPECT_TRUE(((ry - y).abs() <= bound(x, w) + 1e-5).all().item<bool>());
  EXPECT_TRUE(((rg - x.grad()).abs() <= bound(g, w.t()) + 1e-5).all().item<bool>());
  // 8-bit weights with an offset in 2-bit cells: 4 cells a weight.
  EXPECT_DOUBLE_EQ(r.loaded.cost().counters().at("cell_writes"), kIn * kOut * 4.0);
  EXPECT_GT(r.forward_cost.counters().at("adc_conversions"), 0);
  EXPECT_GT(r.backward_cost.counters().at("adc_conversions"), 0);
  EXPECT_GT(r.forward_cost.energy_j(), 0);
}

Job RunJob(int port, DeviceKind::Name head_device, const ModelSpec& model = ModelSpec()) {
  auto stub = JobService::NewStub(MakeChannel(absl::StrCat("127.0.0.1:", port), TlsCredentials()));
  SubmitJobRequest submit;
  submit.mutable_spec()->set_name("head-" + KindName(head_device));
  submit.mutable_spec()->mutable_training()->set_epochs(2);
  submit.mutable_spec()->mutable_data()->mutable_synthetic()->set_stations(8);
  submit.mutable_spec()->mutable_data()->mutable_synthetic()->set_time_steps(160);
  submit.mutable_spec()->mutable_placement()->set_head_device(head_device);
  *submit.mutable_spec()->mutable_model() = model;
  Job job;
  grpc::ClientContext submit_context;
  EXPECT_TRUE(stub->SubmitJob(&submit_context, submit, &job).ok());
  grpc::ClientContext watch_context;
  WatchJobRequest watch;
  watch.set_job_id(job.job_id());
  auto reader = stub->WatchJob(&watch_context, watch);
  Job update;
  while (reader->Read(&update)) job = update;
  EXPECT_TRUE(reader->Finish().ok());
  return job;
}

const DeviceCost* CostOf(const Job& job, DeviceKind::Name kind) {
  for (const DeviceCost& d : job.device_costs()) {
    if (d.kind() == kind) return &d;
  }
  return nullptr;
}

TEST_F(DevicesTest, HeadOnReramReportsExactlyOneWritePerCellToTheCoordinator) {
  Job job = RunJob(coordinator_port_, DeviceKind::reram);
  ASSERT_EQ(job.state(), SUCCEEDED) << job.error();
  const DeviceCost* reram = CostOf(job, DeviceKind::reram);
  ASSERT_NE(reram, nullptr);
  // tiny preset head: reduction 16 x 32 and regression 1 x 16, each weight
  // in 4 cells; programmed once, never rewritten (frozen).
  EXPECT_DOUBLE_EQ(reram->cost().counters().at("cell_writes"), (16 * 32 + 16) * 4.0);
  EXPECT_DOUBLE_EQ(reram->cost().counters().at("max_cell_writes"), 1);
  EXPECT_GT(reram->cost().counters().at("adc_conversions"), 0);
  EXPECT_GT(reram->cost().simulated_s(), 0);
  EXPECT_GT(reram->tasks(), 10);
  ASSERT_NE(CostOf(job, DeviceKind::gpu), nullptr);
}

// A paper preset's head reads the embedding beside the last layer: the
// GPU worker hands both on, and the ReRAM head holds the wider reduction.
TEST_F(DevicesTest, AHeadOnReramReadsTheEmbeddingBesideTheLastLayer) {
  ModelSpec model;
  model.set_preset("weather");
  model.set_d_model(16);
  model.set_num_layers(1);
  model.set_num_heads(2);
  Job job = RunJob(coordinator_port_, DeviceKind::reram, model);
  ASSERT_EQ(job.state(), SUCCEEDED) << job.error();
  const DeviceCost* reram = CostOf(job, DeviceKind::reram);
  ASSERT_NE(reram, nullptr);
  // Reduction 8 x (16 + 16) and regression 1 x 8, each weight in 4 cells.
  EXPECT_DOUBLE_EQ(reram->cost().counters().at("cell_writes"), (8 * 32 + 8) * 4.0);
  ASSERT_EQ(job.epoch_losses_size(), 2);
  EXPECT_TRUE(std::isfinite(job.epoch_losses(1)));
}

TEST_F(DevicesTest, HeadOnSystolicTrainsAndReportsArrayCosts) {
  Job job = RunJob(coordinator_port_, DeviceKind::systolic);
  ASSERT_EQ(job.state(), SUCCEEDED) << job.error();
  ASSERT_EQ(job.epoch_losses_size(), 2);
  EXPECT_LT(job.epoch_losses(1), job.epoch_losses(0));
  const DeviceCost* systolic = CostOf(job, DeviceKind::systolic);
  ASSERT_NE(systolic, nullptr);
  EXPECT_GT(systolic->cost().counters().at("macs"), 0);
  EXPECT_GT(systolic->cost().counters().at("cycles"), 0);
  EXPECT_GT(systolic->cost().energy_j(), 0);
}

}  // namespace
}  // namespace hpt
