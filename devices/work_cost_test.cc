#include "devices/work_cost.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "common/gpu_baseline.h"
#include "devices/cost_settings.h"
#include "devices/reram/reram_layer.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

double Counter(const CostReport& c, const std::string& name) {
  auto it = c.counters().find(name);
  return it == c.counters().end() ? 0 : it->second;
}

TEST(WorkCost, SystolicProductsAreSimulateGemm) {
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::systolic);
  config.systolic.rows = 32;
  TaskWork work;
  SystolicGemmWork* g = work.add_items()->mutable_gemm();
  g->set_m(57);
  g->set_n(64);
  g->set_k(96);
  g->set_times(3);
  const SystolicReport r = SimulateGemm(config.systolic, {57, 64, 96});
  const CostReport c = CostTaskWork(work, config);
  EXPECT_DOUBLE_EQ(c.simulated_s(), 3 * r.latency_s);
  EXPECT_DOUBLE_EQ(c.energy_j(), 3 * r.energy_j);
  EXPECT_DOUBLE_EQ(Counter(c, "macs"), 3.0 * 57 * 64 * 96);
}

TEST(WorkCost, ReramReadsAndProgrammingAreTheLayersOwn) {
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::reram);
  absl::StatusOr<ReramLayer> layer = ReramLayer::Create(config.reram, 96, 40);
  ASSERT_TRUE(layer.ok());
  ASSERT_TRUE(layer->SetDuplication(3).ok());
  std::vector<float> w(96 * 40, 0.25f), x(10 * 96, 0.5f), y(10 * 40), g(10 * 40, 0.1f),
      gx(10 * 96);
  absl::StatusOr<ReramReport> programmed = layer->Program(w.data());
  absl::StatusOr<ReramReport> forward = layer->Forward(x.data(), 10, y.data());
  absl::StatusOr<ReramReport> backward = layer->Transposed(g.data(), 10, gx.data());
  ASSERT_TRUE(programmed.ok() && forward.ok() && backward.ok());

  TaskWork work;
  ReramProgramWork* p = work.add_items()->mutable_reram_program();
  p->set_layer("w");
  p->set_k(96);
  p->set_n(40);
  p->set_duplication(3);
  const CostReport pc = CostTaskWork(work, config);
  EXPECT_DOUBLE_EQ(pc.simulated_s(), programmed->latency_s);
  EXPECT_DOUBLE_EQ(pc.energy_j(), programmed->energy_j);
  EXPECT_EQ(Counter(pc, "cell_writes"), double(programmed->cell_writes));

  for (bool transposed : {false, true}) {
    TaskWork read;
    ReramReadWork* r = read.add_items()->mutable_reram_read();
    r->set_layer("w");
    r->set_k(96);
    r->set_n(40);
    r->set_vectors(10);
    r->set_transposed(transposed);
    r->set_duplication(3);
    const ReramReport& want = transposed ? *backward : *forward;
    const CostReport c = CostTaskWork(read, config);
    EXPECT_DOUBLE_EQ(c.simulated_s(), want.latency_s);
    EXPECT_DOUBLE_EQ(c.energy_j(), want.energy_j);
    EXPECT_EQ(Counter(c, "crossbar_activations"), double(want.crossbar_activations));
    // A re-plan's copies replace the recorded ones.
    const LayerCopies one = {{"w", 1}};
    const CostReport single = CostTaskWork(read, config, GpuBaseline::paper, &one);
    EXPECT_GT(single.simulated_s(), c.simulated_s());
  }
}

TEST(WorkCost, ConcurrentReadsTakeTheLongest) {
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::reram);
  TaskWork work;
  for (int64_t n : {64, 256}) {
    ReramReadWork* r = work.add_items()->mutable_reram_read();
    r->set_layer("w");
    r->set_k(128);
    r->set_n(n);
    r->set_vectors(32);
    r->set_duplication(1);
    r->set_concurrent("forward:x");
  }
  const double longest = ReramLayerReadCost(config.reram, 32, 128, 256).latency_s;
  EXPECT_DOUBLE_EQ(CostTaskWork(work, config).simulated_s(), longest);
}

TEST(WorkCost, PaperGpuIsTheKernelModel) {
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::gpu);
  std::vector<GpuKernel> kernels = {{"aten::mm", 2e9, 1e7}, {"aten::add", 1e3, 1e4},
                                    {"aten::view", 0, 0},   {"aten::add", 1e3, 1e4},
                                    {"aten::mm", 2e9, 1e7}, {"aten::relu", 1e3, 8e3}};
  TaskWork work;
  AddKernels(kernels, &work);
  ASSERT_EQ(work.kernels_size(), 3);  // mm, add, relu; the view launches none
  EXPECT_EQ(work.kernels(0).count(), 2);
  // The paper's forward is a Python program's.
  const GpuStepCost want =
      CostKernels(config.gpu, GpuPrecision::kFp32, kernels, GpuLaunch::kPythonEager);
  const CostReport c = CostTaskWork(work, config);
  EXPECT_NEAR(c.simulated_s(), want.time_s, 1e-15);
  EXPECT_NEAR(c.energy_j(), want.energy_j, 1e-12);
  EXPECT_EQ(Counter(c, "kernels"), 5);
  EXPECT_EQ(Counter(c, "launch_bound_kernels"), double(want.launch_bound_kernels));
}

TEST(WorkCost, AStateLargerThanTheCacheStreamsWeightsAndTheUpdate) {
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::gpu);
  GpuSpec& g = config.gpu;
  g.synchronous = true;
  g.dispatch_s = 0;
  g.gemm_grid = *GemmGrid::Make({8}, {8}, {8}, {2e9});
  g.gemm_grid_streamed = *GemmGrid::Make({8}, {8}, {8}, {1e9});
  g.memory_rates = {{1, 1e10}};
  g.memory_rates_streamed = {{1, 1e9}};
  g.cache_bytes = 1e6;
  GpuKernel mm{"aten::mm", 1e6, 1e3};
  mm.shape = GemmShape{8, 8, 8};
  TaskWork work;
  AddKernels({mm, {"aten::add", 0, 1e6}}, &work);
  ASSERT_EQ(work.kernels(0).m(), 8);
  auto seconds = [&](int64_t state_bytes, const std::string& task) {
    work.set_state_bytes(state_bytes);
    return CostTaskWork(work, config, GpuBaseline::libtorch, nullptr, task).simulated_s();
  };
  EXPECT_DOUBLE_EQ(seconds(1000, "forward"), 1e6 / 2e9 + 1e6 / 1e10);
  EXPECT_DOUBLE_EQ(seconds(2e6, "forward"), 1e6 / 1e9 + 1e6 / 1e10);  // the weight streams
  EXPECT_DOUBLE_EQ(seconds(2e6, "update"), 1e6 / 1e9 + 1e6 / 1e9);    // and the state
  EXPECT_DOUBLE_EQ(seconds(0, "update"), 1e6 / 2e9 + 1e6 / 1e10);      // not recorded
}

// Adam a parameter at a time reads each parameter's tensors from memory
// once and runs its other passes from cache, while they fit the cache.
TEST(WorkCost, AnUpdateByParameterReadsItsStateOnce) {
  GpuSpec g;
  g.memory_bw = 1e10;
  g.memory_share = 1;
  g.memory_rates = {{1, 1e11}};
  g.memory_rates_streamed = {{1, 2e10}};
  g.cache_bytes = 64e6;
  // 1M elements: 24 MB live; 28 bytes an element come from memory.
  std::optional<double> once = ParameterStateReadS(g, {1 << 20, 1 << 20});
  ASSERT_TRUE(once.has_value());
  EXPECT_NEAR(*once, 2 * 28.0 * double(1 << 20) * (1 / 2e10 - 1 / 1e11), 1e-12);
  EXPECT_FALSE(ParameterStateReadS(g, {1 << 20, 4 << 20}).has_value());  // 96 MB live
  EXPECT_FALSE(ParameterStateReadS(g, {}).has_value());

  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::gpu);
  config.gpu = g;
  config.gpu.fp32_flops = 1e12;
  config.gpu.compute_share = 1;
  config.gpu.synchronous = true;
  TaskWork work;
  AddKernels({{"aten::add_", 0, 12.0 * (1 << 20)}}, &work);
  work.add_optimizer_numel(1 << 20);
  work.set_state_bytes(int64_t(100e6));  // past the cache
  const double s =
      CostTaskWork(work, config, GpuBaseline::libtorch, nullptr, "update").simulated_s();
  EXPECT_NEAR(s, 12.0 * (1 << 20) / 1e11 + 28.0 * (1 << 20) * (1 / 2e10 - 1 / 1e11), 1e-12);
}

TEST(WorkCost, MultiTensorLaunchesFollowPytorchsChunking) {
  // 200 small tensors: lists of 36 -> 6 launches.
  EXPECT_EQ(MultiTensorLaunchShares(std::vector<int64_t>(200, 1000)).size(), 6u);
  // One tensor of 700 chunks: 320 + 320 + 60 blocks.
  const std::vector<double> big = MultiTensorLaunchShares({700 * kMultiTensorChunk});
  ASSERT_EQ(big.size(), 3u);
  EXPECT_DOUBLE_EQ(big[0], 320.0 / 700);
  EXPECT_DOUBLE_EQ(big[2], 60.0 / 700);
  std::vector<double> mixed = MultiTensorLaunchShares({10, 0, 5 * kMultiTensorChunk + 1, 7});
  EXPECT_NEAR(std::accumulate(mixed.begin(), mixed.end(), 0.0), 1.0, 1e-12);
  EXPECT_TRUE(MultiTensorLaunchShares({}).empty());
}

TEST(WorkCost, EachBaselineLaunchesItsOwnWay) {
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::gpu);
  const GpuSpec& g = config.gpu;
  TaskWork update;
  std::vector<GpuKernel> kernels;
  for (int t = 0; t < 100; ++t) {
    for (int k = 0; k < 8; ++k) kernels.push_back({"aten::mul_", 512, 4096});
    update.add_optimizer_numel(512);
  }
  AddKernels(kernels, &update);
  auto cost = [&](GpuBaseline::Name b, const std::string& type) {
    return CostTaskWork(update, config, b, nullptr, type);
  };
  const CostReport paper = cost(GpuBaseline::paper, "update");
  const CostReport libtorch = cost(GpuBaseline::libtorch, "update");
  const CostReport fused = cost(GpuBaseline::fused, "update");
  const CostReport graph = cost(GpuBaseline::graph, "update");
  EXPECT_EQ(Counter(paper, "kernels"), 800);
  EXPECT_EQ(Counter(fused, "kernels"), 3);  // ceil(100 / 36)
  // Launch-bound: Python's update pays its layer on every op, C++'s only
  // the dispatch; fused Adam is one Python call of three launches.
  EXPECT_NEAR(paper.simulated_s(), 800 * (g.dispatch_s + g.python_op_s), 1e-12);
  EXPECT_NEAR(libtorch.simulated_s(), 800 * g.dispatch_s, 1e-12);
  EXPECT_NEAR(fused.simulated_s(), 3 * g.dispatch_s + g.python_op_s, 1e-12);
  // Autograd runs a backward in C++ whoever called it.
  EXPECT_NEAR(cost(GpuBaseline::paper, "backward").simulated_s(), libtorch.simulated_s(), 1e-15);
  // The graph: one launch, then three nodes, each its device time (at least
  // the shortest kernel's) plus a node's (lists of 36, 36 and 28 tensors).
  const double bandwidth = g.memory_bw * g.memory_share;
  double want = g.dispatch_s;
  for (int tensors : {36, 36, 28}) {
    want += std::max(g.min_kernel_s, tensors * 512 * kFusedAdamBytesPerElement / bandwidth) +
            g.graph_node_s;
  }
  EXPECT_NEAR(graph.simulated_s(), want, 1e-15);
  EXPECT_LT(graph.simulated_s(), fused.simulated_s());
  EXPECT_DOUBLE_EQ(Counter(fused, "flops"), Counter(paper, "flops"));
  EXPECT_DOUBLE_EQ(Counter(fused, "dram_bytes"), 100 * 512 * kFusedAdamBytesPerElement);
  for (GpuBaseline::Name b : AllGpuBaselines()) {
    EXPECT_EQ(*ParseGpuBaseline(GpuBaselineName(b)), b);
  }
  EXPECT_FALSE(ParseGpuBaseline("tuned").ok());
}

TEST(WorkCost, Bf16RunsProductsAtTheTensorCoresRate) {
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::gpu);
  config.gpu = *GpuPreset("a100");  // peaks only (h100's products are measured, in fp32)
  TaskWork work;
  const double flops = 2.0 * 8192 * 8192 * 8192;
  AddKernels({{"aten::mm", flops, 3.0 * 8192 * 8192 * 4}}, &work);
  const double fp32 = CostTaskWork(work, config, GpuBaseline::graph).simulated_s();
  const double bf16 = CostTaskWork(work, config, GpuBaseline::bf16).simulated_s();
  const double h = config.gpu.dispatch_s + config.gpu.graph_node_s;
  EXPECT_NEAR(fp32 - h, flops / (19.5e12 * config.gpu.compute_share), 1e-9);
  EXPECT_NEAR(bf16 - h, flops / (312e12 * config.gpu.compute_share), 1e-9);
}

TEST(CostSettings, ACalibratedProfileTravelsAsText) {
  DeviceCostConfig gpu = DefaultDeviceCostConfig(DeviceKind::gpu);
  GpuSpec mine = *GpuPreset("a100");
  mine.name = "NVIDIA A100-SXM4-40GB (calibrated)";
  mine.dispatch_s = 7.25e-6;
  mine.gemm_rates = {{1e6, 1e11}, {1e9, 1.2e13}};
  ASSERT_TRUE(ApplyDeviceSetting("reference_gpu", GpuProfileText(mine), &gpu).ok());
  EXPECT_EQ(gpu.gpu.name, mine.name);
  const std::map<std::string, std::string> s = DeviceSettingsOf(gpu);
  EXPECT_EQ(s.at("reference_gpu").find('\n'), std::string::npos);
  absl::StatusOr<DeviceCostConfig> back = DeviceCostConfigFrom(DeviceKind::gpu, s);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->gpu.dispatch_s, 7.25e-6);
  EXPECT_EQ(back->gpu.gemm_rates.size(), 2u);
  absl::Status bad = ApplyDeviceSetting("reference_gpu", "name = x; fp32_flops = fast", &gpu);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("fp32_flops"), std::string::npos) << bad;
}

TEST(CostSettings, RoundTripAndErrorsNameTheKey) {
  DeviceCostConfig c = DefaultDeviceCostConfig(DeviceKind::reram);
  ASSERT_TRUE(ApplyDeviceSetting("systolic_rows", "64", &c).ok());
  ASSERT_TRUE(ApplyDeviceSetting("reram_clock_hz", "7.5e8", &c).ok());
  ASSERT_TRUE(ApplyDeviceSetting("systolic_clock_hz", "1.23456789012e9", &c).ok());
  absl::StatusOr<DeviceCostConfig> back =
      DeviceCostConfigFrom(DeviceKind::reram, DeviceSettingsOf(c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->systolic.rows, 64);
  EXPECT_EQ(back->reram.clock_hz, 7.5e8);
  EXPECT_EQ(back->systolic.clock_hz, 1.23456789012e9);

  absl::Status unknown = ApplyDeviceSetting("systolic_rowz", "64", &c);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("systolic_rowz"), std::string::npos);
  absl::Status bad = ApplyDeviceSetting("systolic_rows", "sixty", &c);
  EXPECT_NE(bad.message().find("systolic_rows='sixty'"), std::string::npos) << bad;
  DeviceCostConfig gpu = DefaultDeviceCostConfig(DeviceKind::gpu);
  EXPECT_FALSE(ApplyDeviceSetting("reference_gpu", "p100", &gpu).ok());
  ASSERT_TRUE(ApplyDeviceSetting("reference_gpu", "h100", &gpu).ok());
  EXPECT_EQ(gpu.gpu.name, "h100");
  // Settings of another kind's device are not this one's.
  ASSERT_TRUE(ApplyDeviceSetting("systolic_rows", "8", &gpu).ok());
  EXPECT_EQ(ApplyDeviceSetting("reram_chip_tiles", "8", &gpu).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(FindCostSetting("reram_adc_bits")->changes_numerics);
  EXPECT_FALSE(FindCostSetting("systolic_rows")->changes_numerics);
}

}  // namespace
}  // namespace hpt
