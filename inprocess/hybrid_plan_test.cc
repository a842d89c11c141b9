// The LoRA phase's device plan against the LibTorch model it stands for:
// the same weights run through the planned segments on simulated-device
// executors must give the same prediction, loss and gradients (fp32
// systolic numerics everywhere), and on real ReRAM numerics stay close
// while every programmed cell is written exactly once.
#include "coordinator/training/hybrid_plan.h"

#include <torch/torch.h>

#include "common/tensor_codec.h"
#include "coordinator/dispatch/local_worker_client.h"
#include "coordinator/training/hybrid_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/lora.h"
#include "models/st_transformer.h"
#include "workers/sim/device_executor.h"

namespace hpt {
namespace {

constexpr int64_t kBatch = 3, kTokens = 5, kFeatures = 6;

ModelConfig Tiny(bool embedding_skip = false) {
  ModelConfig c;
  c.set_embedding_skip(embedding_skip);
  c.set_preset("tiny");
  c.set_input_features(kFeatures);
  c.set_output_features(1);
  c.set_d_model(16);
  c.set_num_layers(2);
  c.set_num_heads(4);
  c.set_ff_multiplier(2);
  c.set_dropout(0);
  c.set_reduction_dim(8);
  return c;
}

LoraConfig Lora() {
  LoraConfig l;
  l.set_enabled(true);
  l.set_rank(3);
  l.set_alpha(6);
  l.set_dropout_set(true);  // dropout 0: deterministic comparison
  l.add_targets("q_proj");
  l.add_targets("v_proj");
  l.add_targets("o_proj");
  return LoraDefaults(l);
}

HostTensor ToHost(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kFloat32).contiguous().cpu();
  HostTensor h(std::vector<int64_t>(c.sizes().begin(), c.sizes().end()));
  std::copy_n(c.data_ptr<float>(), h.data.size(), h.data.data());
  return h;
}

double MaxRelDiff(const HostTensor& a, const torch::Tensor& b) {
  torch::Tensor bt = b.detach().contiguous().cpu();
  double scale = bt.abs().max().item<double>();
  double worst = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a.data[i]) - bt.data_ptr<float>()[i]));
  }
  return worst / std::max(scale, 1e-12);
}

// Parameterised by embedding_skip: the plan reproduces the model with and
// without the reduction reading the embedding.
class HybridPlanTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    torch::manual_seed(3);
    model_ = SpatioTemporalTransformer(Tiny(GetParam()));
    auto ranks = ApplyLora(model_, Lora(), {});
    ASSERT_TRUE(ranks.ok()) << ranks.status();
    ranks_ = *ranks;
    // Non-zero B so every adapter carries signal and gradient to A.
    torch::NoGradGuard no_grad;
    for (auto& item : model_->named_parameters()) {
      if (item.key().find(".B.weight") != std::string::npos) {
        item.value().normal_(0, 0.3);
      }
      params_[item.key()] = ToHost(item.value());
    }
    params_["token_encoding"] = ToHost(TokenEncoding(kTokens, 16));
    x_ = torch::randn({kBatch, kTokens, kFeatures});
    y_ = torch::randn({kBatch, kTokens, 1});
  }

  // Runs one training forward and backward through the plan.
  void RunPlan(DeviceKind::Name reram_kind, double* loss, HostTensor* prediction,
               HostTensor* input_grad, std::vector<double>* grad_norms,
               std::vector<FinishedTask>* tasks) {
    DeviceExecutor::Options reram_options, systolic_options;
    reram_options.kind = reram_kind;
    systolic_options.kind = DeviceKind::systolic;
    reram_ = *DeviceExecutor::Create(reram_options);
    systolic_ = *DeviceExecutor::Create(systolic_options);
    reram_client_ = std::make_unique<LocalWorkerClient>("reram", reram_.get());
    systolic_client_ = std::make_unique<LocalWorkerClient>("systolic", systolic_.get());
    auto plan = PlanHybrid(Tiny(GetParam()), Lora(), ranks_, {});
    ASSERT_TRUE(plan.ok()) << plan.status();
    OptimizerConfig opt;
    opt.set_learning_rate(1e-3);
    HybridRunner runner("j", *plan, {reram_client_.get()}, {systolic_client_.get()}, opt);
    TaskSink sink = [&](const FinishedTask& r) { tasks->push_back(r); };
    ASSERT_TRUE(runner.Load(params_, sink).ok());
    HostTensor x = ToHost(x_), y = ToHost(y_);
    auto l = runner.Forward(x, &y, 0, true, sink, prediction);
    ASSERT_TRUE(l.ok()) << l.status();
    *loss = *l;
    absl::Status back = runner.Backward(0, sink, input_grad);
    ASSERT_TRUE(back.ok()) << back;
    *grad_norms = runner.last_segment_grad_norms();
    plan_ = *plan;
  }

  SpatioTemporalTransformer model_{nullptr};
  std::map<std::string, int> ranks_;
  std::map<std::string, HostTensor> params_;
  torch::Tensor x_, y_;
  HybridPlan plan_;
  std::unique_ptr<DeviceExecutor> reram_, systolic_;
  std::unique_ptr<LocalWorkerClient> reram_client_, systolic_client_;
};

TEST_P(HybridPlanTest, PaperPlacementCutsEightSegmentsPerLayer) {
  auto plan = PlanHybrid(Tiny(GetParam()), Lora(), ranks_, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Embedding on systolic, then per layer: reram q/k/v, systolic adapters
  // and attention, reram o, systolic norm1, reram ff1, systolic relu,
  // reram ff2, systolic norm2 (the last one also runs reduction and head).
  ASSERT_EQ(plan->segments.size(), 1u + 8u * 2u);
  int reram_linears = 0;
  for (const PlannedSegment& s : plan->segments) {
    for (const SegmentOp& op : s.spec.ops()) {
      if (s.kind == DeviceKind::reram) {
        EXPECT_EQ(op.type(), SegmentOp::LINEAR) << s.spec.name();
        EXPECT_FALSE(op.trainable()) << op.weight();
        ++reram_linears;
      } else if (op.type() == SegmentOp::LINEAR) {
        EXPECT_TRUE(op.trainable()) << op.weight();  // modules_to_save only
      }
    }
  }
  EXPECT_EQ(reram_linears, 2 * 6);  // q, k, v, o, ff1, ff2 per layer
  EXPECT_EQ(plan->segments.front().spec.inputs(0), "x");
  EXPECT_THAT(plan->segments.back().spec.outputs(), ::testing::ElementsAre("prediction"));
  EXPECT_EQ(plan->segments[1].spec.ops_size(), 3);  // q, k, v in one call
  // The skip: the embedding's output travels from the first segment to
  // the last, which concatenates it beside the last layer.
  auto skip = PlanHybrid(Tiny(true), Lora(), ranks_, {});
  ASSERT_TRUE(skip.ok()) << skip.status();
  ASSERT_EQ(skip->segments.size(), plan->segments.size());
  EXPECT_THAT(skip->segments.front().spec.outputs(), ::testing::Contains("emb.2"));
  EXPECT_THAT(skip->segments.back().spec.inputs(), ::testing::Contains("emb.2"));
  std::vector<std::vector<std::string>> concats;
  for (const PlannedSegment& s : skip->segments) {
    for (const SegmentOp& op : s.spec.ops()) {
      if (op.type() == SegmentOp::CONCAT) {
        concats.push_back({op.inputs().begin(), op.inputs().end()});
      }
    }
  }
  EXPECT_THAT(concats, ::testing::ElementsAre(::testing::ElementsAre("h2", "emb.2")));
  EXPECT_EQ(skip->segments.back().kind, DeviceKind::systolic);

  HybridPlanOptions full;
  full.placement = Placement::reram_full;
  auto what_if = PlanHybrid(Tiny(), Lora(), ranks_, full);
  ASSERT_TRUE(what_if.ok());
  for (const PlannedSegment& s : what_if->segments) {
    for (const SegmentOp& op : s.spec.ops()) {
      if (s.kind == DeviceKind::reram) {
        EXPECT_TRUE(op.trainable()) << op.weight();
      }
    }
  }
  HybridPlanOptions bad;
  bad.placement = Placement::gpu;
  EXPECT_EQ(PlanHybrid(Tiny(), Lora(), ranks_, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  bad.placement = Placement::paper;
  bad.reram_workers = 0;
  EXPECT_EQ(PlanHybrid(Tiny(), Lora(), ranks_, bad).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(TokenEncodingTableTest, EqualsTheModels) {
  EXPECT_LT(MaxRelDiff(TokenEncodingTable(7, 16), TokenEncoding(7, 16)), 1e-6);
}

TEST_P(HybridPlanTest, SegmentsReproduceTheLibTorchLoraModel) {
  double loss = 0;
  HostTensor prediction, input_grad;
  std::vector<double> norms;
  std::vector<FinishedTask> tasks;
  // fp32 everywhere: the "reram" kind is replaced by an fp32 systolic node.
  RunPlan(DeviceKind::systolic, &loss, &prediction, &input_grad, &norms, &tasks);

  torch::Tensor x = x_.clone().requires_grad_(true);
  torch::Tensor out = model_->forward(x);
  torch::Tensor ref_loss = MseLoss(out, y_);
  ref_loss.backward();
  EXPECT_NEAR(loss, ref_loss.item<double>(), 1e-5 * std::fabs(ref_loss.item<double>()));
  EXPECT_LT(MaxRelDiff(prediction, out), 1e-5);
  EXPECT_LT(MaxRelDiff(input_grad, x.grad()), 1e-4);
  // Each segment's gradient norm against the autograd gradients of the
  // parameters it trains.
  std::map<std::string, torch::Tensor> grads;
  for (auto& item : model_->named_parameters()) {
    if (item.value().grad().defined()) grads[item.key()] = item.value().grad();
  }
  int checked = 0;
  for (size_t i = 0; i < plan_.segments.size(); ++i) {
    double sq = 0;
    for (const SegmentOp& op : plan_.segments[i].spec.ops()) {
      if (!op.trainable()) continue;
      for (const std::string* name : {&op.weight(), &op.bias(), &op.weight_b()}) {
        if (name->empty()) continue;
        ASSERT_TRUE(grads.count(*name)) << *name;
        sq += grads[*name].pow(2).sum().item<double>();
      }
    }
    EXPECT_NEAR(norms[i], std::sqrt(sq), 1e-4 * std::sqrt(sq) + 1e-7) << plan_.segments[i].spec.name();
    if (sq > 0) ++checked;
  }
  EXPECT_GE(checked, 5);  // embedding, 3 adapters x 2 layers, head segments
}

INSTANTIATE_TEST_SUITE_P(EmbeddingSkip, HybridPlanTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Skip" : "NoSkip";
                         });

TEST(PartialPlanTest, SomeLayersSwitchedReproducesTheLibTorchModel) {
  // Layerwise, layer 0 switched and layer 1 still training in full: only
  // layer 0's frozen weights go to ReRAM; layer 1's weights and norms, the
  // embedding and the head train on the systolic arrays, as the LibTorch
  // model with LoRA on layer 0 alone trains them.
  torch::manual_seed(5);
  SpatioTemporalTransformer model(Tiny());
  LoraConfig lora = Lora();
  lora.add_layers(0);
  auto ranks = ApplyLora(model, lora, {});
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  std::map<std::string, HostTensor> params;
  {
    torch::NoGradGuard no_grad;
    for (auto& item : model->named_parameters()) {
      if (item.key().find(".B.weight") != std::string::npos) item.value().normal_(0, 0.3);
      params[item.key()] = ToHost(item.value());
    }
  }
  params["token_encoding"] = ToHost(TokenEncoding(kTokens, 16));
  HybridPlanOptions options;
  options.full_layers = {1};
  auto plan = PlanHybrid(Tiny(), lora, *ranks, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int reram_linears = 0;
  for (const PlannedSegment& s : plan->segments) {
    for (const SegmentOp& op : s.spec.ops()) {
      const bool layer1 = op.weight().rfind("layers.1.", 0) == 0;
      if (s.kind == DeviceKind::reram) {
        EXPECT_EQ(op.weight().rfind("layers.0.", 0), 0u) << op.weight();
        ++reram_linears;
      }
      if (op.type() == SegmentOp::LORA) {
        EXPECT_FALSE(layer1) << op.weight();
      }
      if (op.type() == SegmentOp::LAYER_NORM) {
        EXPECT_EQ(op.trainable(), layer1) << op.weight();
      }
    }
  }
  EXPECT_EQ(reram_linears, 6);  // layer 0's q, k, v, o, ff1, ff2
  EXPECT_EQ(plan->reram_layers.size(), 6u);

  DeviceExecutor::Options fp32, systolic;
  fp32.kind = systolic.kind = DeviceKind::systolic;  // fp32 in place of ReRAM: exact
  auto reram = *DeviceExecutor::Create(fp32);
  auto arrays = *DeviceExecutor::Create(systolic);
  LocalWorkerClient reram_client("reram", reram.get()), systolic_client("systolic", arrays.get());
  HybridRunner runner("j", *plan, {&reram_client}, {&systolic_client}, OptimizerConfig());
  ASSERT_TRUE(runner.Load(params, {}).ok());
  torch::Tensor x = torch::randn({kBatch, kTokens, kFeatures});
  torch::Tensor y = torch::randn({kBatch, kTokens, 1});
  HostTensor hx = ToHost(x), hy = ToHost(y), prediction;
  auto loss = runner.Forward(hx, &hy, 0, true, {}, &prediction);
  ASSERT_TRUE(loss.ok()) << loss.status();
  ASSERT_TRUE(runner.Backward(0, {}).ok());
  torch::Tensor out = model->forward(x);
  torch::Tensor ref = MseLoss(out, y);
  ref.backward();
  EXPECT_NEAR(*loss, ref.item<double>(), 1e-5 * std::fabs(ref.item<double>()));
  EXPECT_LT(MaxRelDiff(prediction, out), 1e-5);
  // Every parameter LibTorch trains has a gradient here, and no other.
  double sq = 0, trained = 0;
  for (auto& item : model->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    ++trained;
    sq += item.value().grad().pow(2).sum().item<double>();
  }
  double norms_sq = 0;
  for (double n : runner.last_segment_grad_norms()) norms_sq += n * n;
  EXPECT_NEAR(std::sqrt(norms_sq), std::sqrt(sq), 1e-4 * std::sqrt(sq));
  EXPECT_GT(trained, 20);
}

TEST_P(HybridPlanTest, ReramSegmentsAreCloseAndWriteEachCellOnce) {
  double loss = 0;
  HostTensor prediction, input_grad;
  std::vector<double> norms;
  std::vector<FinishedTask> tasks;
  RunPlan(DeviceKind::reram, &loss, &prediction, &input_grad, &norms, &tasks);
  torch::Tensor out = model_->forward(x_);
  // Quantised crossbar reads (5-bit ADC, 8-bit inputs): a few percent.
  EXPECT_LT(MaxRelDiff(prediction, out), 0.1);
  double load_writes = 0, later_writes = 0, cells = 0;
  for (const FinishedTask& t : tasks) {
    if (t.kind != DeviceKind::reram) continue;
    const auto& c = t.cost.counters();
    const double writes = c.count("cell_writes") ? c.at("cell_writes") : 0;
    (t.type == "load" ? load_writes : later_writes) += writes;
    if (t.type == "load") {
      EXPECT_EQ(c.at("max_cell_writes"), 1.0);
    }
  }
  for (const PlannedSegment& s : plan_.segments) {
    if (s.kind != DeviceKind::reram) continue;
    for (const SegmentOp& op : s.spec.ops()) {
      // Per weight: in x out values, each on slices x signs cells.
      const HostTensor& w = params_.at(op.weight());
      cells += double(w.num_elements());
    }
  }
  EXPECT_GT(load_writes, 0);
  EXPECT_EQ(std::fmod(load_writes, cells), 0.0);  // whole cells per weight
  EXPECT_EQ(later_writes, 0);
}

}  // namespace
}  // namespace hpt
