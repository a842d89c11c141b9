#include "workers/gpu/baseline_probe.h"

#include <torch/torch.h>

#include "gtest/gtest.h"
#include "models/model_config.h"
#include "workers/gpu/bf16_autocast.h"
#include "workers/gpu/device_meter.h"

namespace hpt {
namespace {

ProbeBaselinesRequest TinyRequest() {
  ProbeBaselinesRequest r;
  *r.mutable_model() = *PresetModelConfig("tiny");
  r.mutable_model()->set_input_features(6);
  r.mutable_model()->set_output_features(1);
  r.set_batch(4);
  r.set_tokens(5);
  r.set_steps(3);
  r.set_warm_up(1);
  return r;
}

const MeasuredBaseline& Find(const ProbeBaselinesResponse& r, GpuBaseline::Name name) {
  for (const MeasuredBaseline& m : r.baselines()) {
    if (m.baseline() == name) return m;
  }
  static const MeasuredBaseline none;
  ADD_FAILURE() << "no baseline " << GpuBaseline::Name_Name(name);
  return none;
}

// The CPU twin of the GPU probe (tools/gpu_check.sh runs it on CUDA): the
// eager, fused and bf16 steps run and are timed by wall clock; graph says
// why it did not run; no energy is claimed.
TEST(BaselineProbeTest, TimesEachBaselineOnTheCpuAndSaysWhyGraphDidNot) {
  std::unique_ptr<DeviceMeter> meter = DeviceMeter::Create("cpu");
  EXPECT_EQ(meter->measured_by(), "wall time");
  EXPECT_FALSE(meter->measures_energy());
  absl::StatusOr<ProbeBaselinesResponse> r = ProbeBaselines(TinyRequest(), "cpu", meter.get());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->baselines_size(), 4);
  for (GpuBaseline::Name name : {GpuBaseline::paper, GpuBaseline::fused, GpuBaseline::bf16}) {
    const MeasuredBaseline& m = Find(*r, name);
    EXPECT_TRUE(m.not_run().empty()) << name << ": " << m.not_run();
    EXPECT_GT(m.step_s(), 0) << name;
    EXPECT_LT(m.step_s(), 10) << name;
    EXPECT_EQ(m.step_j(), 0) << name;
    EXPECT_EQ(m.timed_steps(), 3);
    EXPECT_EQ(m.warm_up(), 1);
    EXPECT_EQ(m.batch(), 4);
    EXPECT_EQ(m.measured_by(), "wall time");
    EXPECT_FALSE(m.path().empty());
  }
  const MeasuredBaseline& graph = Find(*r, GpuBaseline::graph);
  EXPECT_EQ(graph.step_s(), 0);
  EXPECT_NE(graph.not_run().find("not run: no CUDA"), std::string::npos) << graph.not_run();
  // Only a captured graph has nodes to count.
  for (const MeasuredBaseline& m : r->baselines()) {
    EXPECT_EQ(m.graph_nodes(), 0) << m.baseline();
    EXPECT_EQ(m.graph_kernels(), 0) << m.baseline();
  }
}

TEST(BaselineProbeTest, RunsOnlyTheBaselinesAsked) {
  std::unique_ptr<DeviceMeter> meter = DeviceMeter::Create("cpu");
  ProbeBaselinesRequest request = TinyRequest();
  request.add_baselines(GpuBaseline::fused);
  absl::StatusOr<ProbeBaselinesResponse> r = ProbeBaselines(request, "cpu", meter.get());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->baselines_size(), 1);
  EXPECT_EQ(r->baselines(0).baseline(), GpuBaseline::fused);
}

TEST(BaselineProbeTest, BadRequestsNameTheirField) {
  std::unique_ptr<DeviceMeter> meter = DeviceMeter::Create("cpu");
  ProbeBaselinesRequest r = TinyRequest();
  // libtorch is a modelled baseline, not one a probe runs; 9 has no name.
  r.add_baselines(GpuBaseline::libtorch);
  absl::StatusOr<ProbeBaselinesResponse> bad = ProbeBaselines(r, "cpu", meter.get());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "ProbeBaselinesRequest.baselines: libtorch is not one of paper, fused, graph, bf16");
  r = TinyRequest();
  r.add_baselines(GpuBaseline::Name(9));
  EXPECT_EQ(ProbeBaselines(r, "cpu", meter.get()).status().message(),
            "ProbeBaselinesRequest.baselines: 9 is not one of paper, fused, graph, bf16");

  r = TinyRequest();
  r.set_steps(5000);
  bad = ProbeBaselines(r, "cpu", meter.get());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ProbeBaselinesRequest.steps"), std::string::npos);

  r = TinyRequest();
  r.set_batch(0);
  bad = ProbeBaselines(r, "cpu", meter.get());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ProbeBaselinesRequest.batch"), std::string::npos);
}

// What the bf16 baseline and a bf16 job rest on: inside the guard a
// product comes out in bf16, after it autocast is as it was.
TEST(Bf16AutocastTest, ProductsRunInBf16InsideOnly) {
  const torch::Device cpu(torch::kCPU);
  torch::Tensor a = torch::randn({8, 8}), b = torch::randn({8, 8});
  {
    Bf16Autocast autocast(cpu, true);
    EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kFloat);
  {
    Bf16Autocast off(cpu, false);
    EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kFloat);
  }
}

// On CUDA the meter times with events and names the GPU; without CUDA
// this part is reported as not run.
TEST(DeviceMeterTest, TimesCudaWorkWithEvents) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "not run: no CUDA device";
  std::unique_ptr<DeviceMeter> meter = DeviceMeter::Create("cuda:0");
  EXPECT_EQ(meter->measured_by(), "cuda events");
  torch::Tensor x = torch::randn({2048, 2048}, torch::Device("cuda:0"));
  meter->Start();
  for (int i = 0; i < 10; ++i) x = torch::matmul(x, x).tanh();
  const DeviceMeter::Reading r = meter->Stop();
  EXPECT_GT(r.s, 0);
  EXPECT_LT(r.s, 10);
  ProbeBaselinesRequest request = TinyRequest();
  absl::StatusOr<ProbeBaselinesResponse> probe = ProbeBaselines(request, "cuda:0", meter.get());
  ASSERT_TRUE(probe.ok()) << probe.status();
  for (const MeasuredBaseline& m : probe->baselines()) {
    EXPECT_TRUE(m.not_run().empty()) << m.baseline() << ": " << m.not_run();
    EXPECT_GT(m.step_s(), 0) << m.baseline();
    if (m.baseline() == GpuBaseline::graph) {
      // The captured step's nodes, counted through the CUDA runtime: a
      // training step launches many kernels, and every kernel is a node.
      EXPECT_GT(m.graph_kernels(), 50);
      EXPECT_LE(m.graph_kernels(), m.graph_nodes());
    } else {
      EXPECT_EQ(m.graph_nodes(), 0) << m.baseline();
    }
  }
}

}  // namespace
}  // namespace hpt
