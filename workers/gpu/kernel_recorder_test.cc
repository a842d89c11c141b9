#include "workers/gpu/kernel_recorder.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <thread>
#include <utility>

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
  // A softmax over dim 1 of [3 x 10 x 4]: 12 rows of 10.
  const torch::Tensor x = torch::randn({3, 10, 4});
  const torch::Tensor y = torch::_softmax(x, 1, false);
  torch::_softmax_backward_data(torch::randn({3, 10, 4}), y, -2, x.scalar_type());
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
  EXPECT_EQ(shape_of("aten::_softmax"), (GemmShape{12, 10, 1}));  // rows, width
  EXPECT_EQ(shape_of("aten::_softmax_backward_data"), (GemmShape{12, 10, 1}));
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
  // host's dispatch of every op it called, views included, and the
  // backward engine's nodes.
  double views = 0, nodes = 0;
  for (const GpuKernel& k : kernels) {
    if (LaunchesNoKernel(k.op)) ++views;
    nodes += double(k.nodes);
  }
  EXPECT_GT(views, 0);
  EXPECT_GT(nodes, 10);
  EXPECT_EQ(c.launch_bound_kernels, c.kernels);
  EXPECT_NEAR(c.time_s, (double(c.kernels) + views) * v100.dispatch_s + nodes * v100.node_s,
              1e-12);
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

// A Scalar argument becomes a 0-dim tensor that CPU LibTorch converts with
// a copy; a GPU kernel takes the number as an argument, so the op itself
// is the one kernel, with its tensor's work.
TEST(KernelRecorderScalarTest, AScalarsConversionIsNoKernel) {
  torch::NoGradGuard no_grad;
  torch::Tensor m = torch::ones({64, 64});
  KernelRecorder recorder;
  m.mul_(0.9);
  std::vector<GpuKernel> k = recorder.Finish();
  ASSERT_EQ(k.size(), 1u);
  EXPECT_NE(k[0].op.find("mul"), std::string::npos) << k[0].op;
  EXPECT_GE(k[0].flops, 4096);
  EXPECT_GE(k[0].bytes, 2 * 4096 * 4);
  EXPECT_EQ(k[0].history, 0);
}

// An out-of-place op on a tensor and a number reads the tensor and writes
// its result: one kernel, two tensors' bytes (and the number's eight), whatever
// the op. pow asks aten::result_type first, which reads only dtypes.
TEST(KernelRecorderScalarTest, ATensorAndANumberMoveTwoTensors) {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({4096});
  const std::vector<std::pair<std::string, std::function<void()>>> ops = {
      {"add", [&] { torch::add(x, 0.7); }},
      {"mul", [&] { torch::mul(x, 0.7); }},
      {"div", [&] { torch::div(x, 0.7); }},
      {"pow", [&] { torch::pow(x, 0.7); }},
  };
  for (const auto& [name, call] : ops) {
    KernelRecorder recorder;
    call();
    std::vector<GpuKernel> k = recorder.Finish();
    ASSERT_EQ(k.size(), 1u) << name;
    EXPECT_NE(k[0].op.find(name), std::string::npos) << k[0].op;
    EXPECT_NEAR(k[0].bytes, 2 * 4096 * 4, 8) << name;
  }
}

// CPU LibTorch fills some outputs before writing them (at::sum zeroes its
// result, native_layer_norm_backward its parameters' gradients): the op
// stays the kernel, with its operands' bytes, and the fill is host time.
// A fill beside another kernel in a composite op is a kernel of its own,
// and a factory after a tensor's shape reads nothing of it.
TEST(KernelRecorderFillTest, AnOpThatFillsItsOutputIsTheKernel) {
  torch::NoGradGuard no_grad;
  torch::Tensor g = torch::ones({256, 32});
  {
    KernelRecorder recorder;
    torch::Tensor s = g.sum(0);
    std::vector<GpuKernel> k = recorder.Finish();
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].op, "aten::sum");
    EXPECT_EQ(k[0].bytes, (256 * 32 + 32) * 4);
    EXPECT_GE(k[0].frames, 1);  // the fill
  }
  {
    KernelRecorder recorder;
    torch::Tensor z = torch::zeros_like(g);
    std::vector<GpuKernel> k = recorder.Finish();
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].op, "aten::zeros_like");
    EXPECT_EQ(k[0].bytes, 256 * 32 * 4);  // written, not read
  }
}

// Both directions of a layer norm are kernels of their own, each with its
// rows and normalised width (the profile's norm grids are read there).
TEST(KernelRecorderFillTest, LayerNormsBackwardIsItsOwnKernel) {
  torch::Tensor x = torch::randn({4, 16, 32}, torch::requires_grad());
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({32}));
  KernelRecorder forward;
  torch::Tensor loss = norm(x).sum();
  std::vector<GpuKernel> forward_kernels = forward.Finish();
  auto norm_forward =
      std::find_if(forward_kernels.begin(), forward_kernels.end(),
                   [](const GpuKernel& k) { return k.op == "aten::native_layer_norm"; });
  ASSERT_NE(norm_forward, forward_kernels.end());
  EXPECT_EQ(norm_forward->shape, (GemmShape{64, 32, 1}));
  KernelRecorder recorder;
  loss.backward();
  std::vector<GpuKernel> kernels = recorder.Finish();
  auto norm_backward =
      std::find_if(kernels.begin(), kernels.end(),
                   [](const GpuKernel& k) { return k.op == "aten::native_layer_norm_backward"; });
  std::string all;
  for (const GpuKernel& k : kernels) all += k.op + " ";
  ASSERT_NE(norm_backward, kernels.end()) << all;
  EXPECT_EQ(norm_backward->shape, (GemmShape{64, 32, 1}));  // rows, width
  // Reads the output gradient and input, writes the input's gradient.
  EXPECT_GE(norm_backward->bytes, 3 * 64 * 32 * 4);
  for (const GpuKernel& k : kernels) EXPECT_FALSE(k.op == "aten::zero_") << "a fill left over";
}

TEST(KernelRecorderFillTest, AFillBesideAnotherKernelIsAKernel) {
  torch::Tensor p = torch::randn({64, 32}, torch::requires_grad());
  torch::Tensor t = torch::randn({64, 32});
  torch::Tensor loss = torch::mse_loss(p, t);
  KernelRecorder recorder;
  loss.backward();
  std::vector<GpuKernel> kernels = recorder.Finish();
  std::vector<std::string> ops;
  for (const GpuKernel& k : kernels) {
    if (!LaunchesNoKernel(k.op)) ops.push_back(k.op);
  }
  // backward()'s seed (ones_like), mse_loss_backward's zeroed result (a
  // kernel: the zeros_like whose fill it is) and its own kernel; the
  // gradient's accumulation launches nothing.
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::ones_like", "aten::zeros_like",
                                           "aten::mse_loss_backward"}));
}

// Frames that launch nothing travel with the kernels as host time; those
// that record autograd history are counted apart, and none do without
// grad mode. AccumulateGrad's detach launches nothing.
TEST(KernelRecorderScalarTest, FramesAndHistoryAreCounted) {
  torch::Tensor w = torch::randn({8, 8}, torch::requires_grad());
  torch::Tensor x = torch::randn({4, 8});
  auto totals = [](const std::vector<GpuKernel>& k) {
    int64_t frames = 0, history = 0, kernels = 0;
    for (const GpuKernel& g : k) {
      frames += g.frames;
      history += g.history;
      if (!LaunchesNoKernel(g.op)) ++kernels;
    }
    return std::array<int64_t, 3>{frames, history, kernels};
  };
  KernelRecorder forward;
  torch::Tensor loss = torch::matmul(x, w.t()).relu().sum();
  const std::array<int64_t, 3> f = totals(forward.Finish());
  EXPECT_EQ(f[2], 3);      // mm, relu, sum
  EXPECT_GE(f[0], 2);      // matmul's own frame, t's transpose, ...
  EXPECT_GE(f[1], f[2]);   // every kernel records history, and t
  KernelRecorder backward;
  loss.backward();
  std::vector<GpuKernel> b = backward.Finish();
  // The engine runs with grad mode off. backward() makes its seed with
  // ones_like of the loss first, with it on: the rule (an input needs
  // gradients) counts that op and its fill as history, though ones_like
  // records none. Its one over-count here.
  EXPECT_LE(totals(b)[1], 2);
  EXPECT_GE(totals(b)[2], 3);
  // Autograd nodes are the engine's host work, not kernels: those that
  // call no kernel (the view's TBackward0, AccumulateGrad) launch nothing.
  int64_t nodes = 0;
  for (const GpuKernel& g : b) {
    EXPECT_NE(g.op, "detach");
    EXPECT_EQ(g.op.find("Backward"), std::string::npos) << g.op;
    EXPECT_EQ(g.op.find("AccumulateGrad"), std::string::npos) << g.op;
    nodes += g.nodes;
  }
  EXPECT_GE(nodes, 4);  // MmBackward0, TBackward0, ReluBackward0, SumBackward0, ...
  {
    torch::NoGradGuard no_grad;
    KernelRecorder plain;
    torch::matmul(x, w.t()).relu().sum();
    const std::array<int64_t, 3> p = totals(plain.Finish());
    EXPECT_EQ(p[2], 3);
    EXPECT_EQ(p[1], 0);
    EXPECT_GE(p[0], 2);
  }
}

// The calibration's cycles are priced as the recorder sees them
// (workers/calibrate/host_calibration.cc): a view of a tensor that needs no
// gradients is one kernel-less op and nothing else (host_op_s, exactly);
// a transpose is one such op and one frame, its as_strided.
TEST(KernelRecorderScalarTest, AViewIsOneKernelLessOpAndNoFrame) {
  torch::Tensor x = torch::ones({4, 4});
  auto record = [](auto body) {
    KernelRecorder recorder;
    body();
    return recorder.Finish();
  };
  const std::vector<GpuKernel> views = record([&] {
    torch::Tensor y = x;
    for (int i = 0; i < 10; ++i) y = y.view({4, 4});
  });
  ASSERT_EQ(views.size(), 10u);
  for (const GpuKernel& k : views) {
    EXPECT_EQ(k.op, "aten::view");
    EXPECT_TRUE(LaunchesNoKernel(k.op));
    EXPECT_EQ(k.frames, 0);
    EXPECT_EQ(k.history, 0);
    EXPECT_EQ(k.nodes, 0);
  }
  const std::vector<GpuKernel> transposes = record([&] { x.transpose(0, 1); });
  ASSERT_EQ(transposes.size(), 1u);
  EXPECT_EQ(transposes[0].frames, 1);
}

// A product records which operand it read transposed: a linear layer's
// x W^T its second, its weight gradient g^T x its first.
TEST(KernelRecorderScalarTest, ProductsRecordTheirLayout) {
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({16, 8}), w = torch::randn({4, 8}), g = torch::randn({16, 4});
  KernelRecorder recorder;
  torch::mm(x, w.t());
  torch::mm(g.t(), x);
  torch::mm(g, w);
  std::vector<GpuKernel> k;
  for (GpuKernel& g : recorder.Finish()) {
    if (!LaunchesNoKernel(g.op)) k.push_back(g);  // t() is a host op
  }
  ASSERT_EQ(k.size(), 3u);
  EXPECT_TRUE(!k[0].shape.a_transposed && k[0].shape.b_transposed);
  EXPECT_TRUE(k[1].shape.a_transposed && !k[1].shape.b_transposed);
  EXPECT_TRUE(!k[2].shape.a_transposed && !k[2].shape.b_transposed);
  EXPECT_EQ(k[1].shape.m, 4);
  EXPECT_EQ(k[1].shape.k, 16);
  EXPECT_EQ(k[1].shape.n, 8);
}

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
