#include "workers/kernel_recorder.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <thread>

#include "devices/gpu/kernel_cost.h"
#include "gtest/gtest.h"
#include "models/model_config.h"
#include "models/model_flops.h"
#include "models/st_transformer.h"

namespace hpt {
namespace {

// Matrix products, and fused attention (its two products in one kernel).
bool IsProduct(const GpuKernel& k) {
  return k.op == "aten::mm" || k.op == "aten::addmm" || k.op == "aten::bmm" ||
         k.op == "aten::baddbmm" || k.op.rfind("aten::_scaled_dot_product_", 0) == 0;
}

struct Counted {
  int64_t kernels = 0, products = 0;
  double product_flops = 0;
};
Counted Count(const std::vector<GpuKernel>& kernels) {
  Counted c;
  for (const GpuKernel& k : kernels) {
    if (LaunchesNoKernel(k.op)) continue;
    ++c.kernels;
    if (IsProduct(k)) {
      ++c.products;
      c.product_flops += k.flops;
    }
  }
  return c;
}

class KernelRecorderTest : public ::testing::Test {
 protected:
  KernelRecorderTest() {
    config_ = *PresetModelConfig("tiny");
    config_.set_input_features(6);
    config_.set_output_features(2);
    torch::manual_seed(1);
    model_ = SpatioTemporalTransformer(config_);
  }
  ModelConfig config_;
  SpatioTemporalTransformer model_{nullptr};
};

TEST_F(KernelRecorderTest, ForwardProductsMatchTheAnalyticCount) {
  const int64_t batch = 4, tokens = 5;
  torch::Tensor x = torch::randn({batch, tokens, 6});
  KernelRecorder recorder;
  torch::Tensor y = model_->forward(x);
  const Counted c = Count(recorder.Finish());
  // Independent count (models/model_flops): 2 FLOPs per multiply-add in
  // the linear layers and the attention's score and context products ...
  const ModelWork work = ForwardWork(config_, batch, tokens, /*encoder_only=*/false);
  // (LibTorch 1.13 applies a linear layer to a 3-D input as a matmul and a
  // separate bias add, so the products hold exactly the multiply-adds.)
  EXPECT_NEAR(c.product_flops, work.flops, 1e-9 * work.flops);
  // Products: embedding 2, per layer q, k, v, o, the fused attention
  // (scores and context in one kernel), ff1, ff2, then reduction and head.
  EXPECT_EQ(c.products, 2 + 7 * config_.num_layers() + 2);
  // Softmax, LayerNorm, ReLU, residual adds and the token encoding launch
  // kernels too.
  EXPECT_GT(c.kernels, c.products + 5 * config_.num_layers());
}

TEST_F(KernelRecorderTest, BackwardRunsTwoProductsPerForwardProduct) {
  torch::Tensor x = torch::randn({4, 5, 6});
  torch::Tensor loss = model_->forward(x).pow(2).mean();
  KernelRecorder recorder;
  loss.backward();
  const Counted c = Count(recorder.Finish());
  // Each linear layer's gradient needs one product per operand, except the
  // input of the first layer, which needs no gradient; the fused
  // attention's backward is one kernel.
  EXPECT_EQ(c.products, 2 * (4 + 6 * config_.num_layers()) - 1 + config_.num_layers());
  const ModelWork work = ForwardWork(config_, 4, 5, false);
  const double first_input_grad = 2.0 * 4 * 5 * 6 * config_.d_model();
  // The flash backward recomputes the scores: one q k^T product more per
  // layer than the eager backward (2 B H T T hd = 2 B T T d FLOPs).
  const double recompute = 2.0 * 4 * 5 * 5 * config_.d_model() * config_.num_layers();
  EXPECT_NEAR(c.product_flops, 2 * work.flops - first_input_grad + recompute, 1e-9 * work.flops);
}

TEST(KernelRecorderShapeTest, ProductsCarryTheirShapes) {
  torch::Tensor a = torch::randn({5, 7}), b = torch::randn({7, 3});
  torch::Tensor q = torch::randn({2, 4, 6, 8}), k = torch::randn({2, 4, 9, 8});
  KernelRecorder recorder;
  torch::mm(a, b);
  torch::bmm(torch::randn({4, 5, 7}), torch::randn({4, 7, 3}));
  at::scaled_dot_product_attention(q, k, k);
  torch::relu(a);
  const std::vector<GpuKernel> kernels = recorder.Finish();
  auto shape_of = [&](const std::string& prefix) {
    for (const GpuKernel& g : kernels) {
      if (g.op.rfind(prefix, 0) == 0) return g.shape;
    }
    return GemmShape{-1, -1, -1};
  };
  // m, n, k: [5 x 7] x [7 x 3]; each of the batch's products; attention's
  // query length, key length and head dimension.
  EXPECT_EQ(shape_of("aten::mm"), (GemmShape{5, 3, 7}));
  EXPECT_EQ(shape_of("aten::bmm"), (GemmShape{5, 3, 7}));
  EXPECT_EQ(shape_of("aten::_scaled_dot_product"), (GemmShape{6, 9, 8}));
  EXPECT_FALSE(shape_of("aten::relu").known());
}

TEST_F(KernelRecorderTest, TinyStepIsLaunchBoundOnAV100) {
  torch::Tensor x = torch::randn({4, 5, 6});
  KernelRecorder recorder;
  torch::Tensor loss = model_->forward(x).pow(2).mean();
  loss.backward();
  const std::vector<GpuKernel> kernels = recorder.Finish();
  const GpuSpec v100 = *GpuPreset("v100");
  const GpuStepCost c = CostKernels(v100, GpuPrecision::kFp32, kernels);
  EXPECT_GT(c.kernels, 100);
  // A model this small does almost no work per kernel: the step is the
  // host's dispatch of every op it called, views included.
  const double views = double(std::count_if(kernels.begin(), kernels.end(), [](const GpuKernel& k) {
    return LaunchesNoKernel(k.op);
  }));
  EXPECT_GT(views, 0);
  EXPECT_EQ(c.launch_bound_kernels, c.kernels);
  EXPECT_NEAR(c.time_s, (double(c.kernels) + views) * v100.dispatch_s, 1e-12);
}

TEST_F(KernelRecorderTest, NestedRecordersRecordOnce) {
  KernelRecorder outer;
  {
    KernelRecorder inner;
    model_->forward(torch::randn({2, 3, 6}));
    EXPECT_TRUE(inner.Finish().empty());  // the outer one has them
  }
  EXPECT_FALSE(outer.Finish().empty());
  KernelRecorder after;
  EXPECT_TRUE(after.Finish().empty());  // nothing ran
}

}  // namespace
}  // namespace hpt

namespace hpt {
namespace {

TEST(KernelRecorderThreadsTest, RecordersOnTwoThreadsEachSeeTheirOwnOps) {
  // Two executors in one process (tests, benchmarks) record at once.
  std::vector<GpuKernel> a, b;
  std::thread other([&] {
    KernelRecorder recorder;
    torch::Tensor x = torch::ones({4, 4});
    for (int i = 0; i < 3; ++i) x = torch::mm(x, x);
    b = recorder.Finish();
  });
  {
    KernelRecorder recorder;
    torch::Tensor y = torch::ones({4, 4});
    y = torch::mm(y, y);
    a = recorder.Finish();
  }
  other.join();
  auto products = [](const std::vector<GpuKernel>& k) {
    return std::count_if(k.begin(), k.end(),
                         [](const GpuKernel& g) { return g.op == "aten::mm"; });
  };
  EXPECT_EQ(products(a), 1);
  EXPECT_EQ(products(b), 3);
}

// A task shape is recorded twice, then its kernels are recalled: the third
// and later tasks of that shape run no recorder. Adam's first step (it makes
// its moments) records more kernels than its second, which the memo keeps.
TEST(KernelMemoTest, RecordsEachShapeTwiceThenRecallsTheSecond) {
  torch::manual_seed(0);
  torch::nn::Linear layer(16, 8);
  torch::optim::Adam adam(layer->parameters(), torch::optim::AdamOptions(1e-3));
  KernelMemo memo;
  std::vector<size_t> counts;
  std::vector<bool> recorded;
  for (int step = 0; step < 4; ++step) {
    torch::Tensor loss = layer(torch::randn({4, 16})).pow(2).mean();
    loss.backward();
    std::unique_ptr<KernelRecorder> recorder = memo.Begin("update");
    recorded.push_back(recorder != nullptr);
    adam.step();
    adam.zero_grad();
    counts.push_back(memo.End("update", std::move(recorder)).size());
  }
  EXPECT_EQ(recorded, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(memo.recorded("update"), 2);
  EXPECT_GT(counts[0], counts[1]);  // the moments made on the first step
  EXPECT_EQ(counts[2], counts[1]);
  EXPECT_EQ(counts[3], counts[1]);
  EXPECT_EQ(memo.recorded("forward [4, 16]"), 0);
}

}  // namespace
}  // namespace hpt
