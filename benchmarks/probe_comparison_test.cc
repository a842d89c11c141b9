#include "benchmarks/probe_comparison.h"

#include <memory>

#include "benchmarks/recorded_step.h"
#include "devices/cost_settings.h"
#include "devices/gpu/roofline.h"
#include "devices/work_cost.h"
#include "gtest/gtest.h"
#include "workers/gpu/device_meter.h"

namespace hpt {
namespace {

// A fixed profile: the rows' model figures are the model's prices of the
// recorded step, whatever this machine's speed.
DeviceCostConfig FixedProfile() {
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::gpu);
  config.gpu = *ParseGpuProfile(
      "name = fixed; fp32_flops = 1e11; memory_bw = 1e10; compute_share = 1; "
      "memory_share = 1; dispatch_s = 2e-6; python_op_s = 5e-6; synchronous = true");
  return config;
}

ProbeComparisonOptions TinyOnCpu() {
  ProbeComparisonOptions o;
  o.device = "cpu";
  o.step = {"tiny", 2, 8};
  o.steps = 2;
  o.warm_up = 1;
  return o;
}

// The real probe on the CPU: paper, fused and bf16 (eager, fused Adam)
// beside the model's C++ paths, graph not run.
TEST(ProbeComparisonTest, SetsEachProbedBaselineBesideTheModelsCppPath) {
  const DeviceCostConfig config = FixedProfile();
  std::unique_ptr<DeviceMeter> meter = DeviceMeter::Create("cpu");
  absl::StatusOr<std::vector<BaselineComparison>> rows =
      CompareWithProbe(config, TinyOnCpu(), meter.get());
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 4u);
  const RecordedStep step = *RecordStep({"tiny", 2, 8});
  DeviceCostConfig from_cpp = config;
  from_cpp.gpu.python_op_s = 0;
  const BaselineComparison& paper = (*rows)[0];
  const BaselineComparison& fused = (*rows)[1];
  EXPECT_EQ(paper.baseline, "paper");
  EXPECT_EQ(fused.baseline, "fused");
  for (const BaselineComparison* r : {&paper, &fused}) {
    EXPECT_TRUE(r->not_run.empty()) << r->not_run;
    EXPECT_GT(r->measured_s, 0);
    EXPECT_DOUBLE_EQ(r->ratio(), r->model_s / r->measured_s);
    EXPECT_EQ(r->measured_j, 0);  // the CPU has no energy counter
    EXPECT_EQ(r->energy_ratio(), 0);
  }
  EXPECT_DOUBLE_EQ(paper.model_s, step.Cost(from_cpp, GpuBaseline::libtorch).time_s);
  EXPECT_DOUBLE_EQ(fused.model_s, step.Cost(from_cpp, GpuBaseline::fused).time_s);
  // Priced without Python's per-op cost: below the Python path's price.
  EXPECT_LT(paper.model_s, step.Cost(config, GpuBaseline::paper).time_s);
  EXPECT_EQ((*rows)[2].baseline, "graph");
  EXPECT_NE((*rows)[2].not_run.find("no CUDA"), std::string::npos) << (*rows)[2].not_run;
  EXPECT_EQ((*rows)[2].measured_s, 0);
  const BaselineComparison& bf16 = (*rows)[3];
  EXPECT_EQ(bf16.baseline, "bf16");
  EXPECT_TRUE(bf16.not_run.empty()) << bf16.not_run;
  EXPECT_GT(bf16.measured_s, 0);
  DeviceCostConfig at_bf16 = from_cpp;
  at_bf16.gpu_precision = GpuPrecision::kBf16;
  const double bf16_model_s = step.Cost(at_bf16, GpuBaseline::fused).time_s;
  EXPECT_DOUBLE_EQ(bf16.model_s, bf16_model_s);
  EXPECT_NE(bf16_model_s, step.Cost(at_bf16, GpuBaseline::bf16).time_s);  // not the graph's
  // Any name of the CPU is the CPU: its bf16 step is the eager one.
  ProbeComparisonOptions indexed = TinyOnCpu();
  indexed.device = "cpu:0";
  rows = CompareWithProbe(config, indexed, meter.get());
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_DOUBLE_EQ((*rows)[3].model_s, bf16_model_s);
}

TEST(ProbeComparisonTest, BadOptionsNameTheirField) {
  std::unique_ptr<DeviceMeter> meter = DeviceMeter::Create("cpu");
  ProbeComparisonOptions lora = TinyOnCpu();
  lora.step.lora = true;
  absl::StatusOr<std::vector<BaselineComparison>> r =
      CompareWithProbe(FixedProfile(), lora, meter.get());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("step.lora"), std::string::npos) << r.status();
  ProbeComparisonOptions unknown = TinyOnCpu();
  unknown.step.preset = "hurricane";
  r = CompareWithProbe(FixedProfile(), unknown, meter.get());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("hurricane"), std::string::npos) << r.status();
  ProbeComparisonOptions no_batch = TinyOnCpu();
  no_batch.step.batch = 0;
  r = CompareWithProbe(FixedProfile(), no_batch, meter.get());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("batch"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace hpt
