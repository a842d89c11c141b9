#include "benchmarks/probe_comparison.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "common/gpu_baseline.h"
#include "devices/work_cost.h"
#include "workers/gpu/baseline_probe.h"

namespace hpt {
namespace {

// The model's baseline for a probed one, as the probe runs it from C++ on
// a CUDA device (`cuda`) or on the CPU, where its bf16 step is the fused
// one, eager, under autocast: the model's fused path at bf16.
GpuBaseline::Name ModelledAs(GpuBaseline::Name probed, bool cuda) {
  if (probed == GpuBaseline::paper) return GpuBaseline::libtorch;
  if (probed == GpuBaseline::fused) return GpuBaseline::fused;
  if (probed == GpuBaseline::graph) return GpuBaseline::graph;
  return cuda ? GpuBaseline::bf16 : GpuBaseline::fused;
}

}  // namespace

absl::StatusOr<std::vector<BaselineComparison>> CompareWithProbe(
    const DeviceCostConfig& config, const ProbeComparisonOptions& o, DeviceMeter* meter) {
  if (o.step.lora) {
    return absl::InvalidArgumentError("step.lora: the probe times the full phase only");
  }
  absl::StatusOr<ModelConfig> model = StepModelConfig(o.step.preset);
  if (!model.ok()) return model.status();
  ProbeBaselinesRequest request;
  *request.mutable_model() = *model;
  request.set_batch(o.step.batch);
  request.set_tokens(o.step.tokens);
  request.set_steps(o.steps);
  request.set_warm_up(o.warm_up);
  absl::StatusOr<ProbeBaselinesResponse> probed = ProbeBaselines(request, o.device, meter);
  if (!probed.ok()) return probed.status();
  absl::StatusOr<RecordedStep> step = RecordStep(o.step);
  if (!step.ok()) return step.status();
  const bool cuda = torch::Device(o.device).is_cuda();  // as the probe tells them apart
  DeviceCostConfig from_cpp = config;
  from_cpp.gpu.python_op_s = 0;
  std::vector<BaselineComparison> rows;
  for (const MeasuredBaseline& m : probed->baselines()) {
    BaselineComparison row;
    row.baseline = GpuBaselineName(m.baseline());
    row.path = m.path();
    row.not_run = m.not_run();
    if (row.not_run.empty()) {
      DeviceCostConfig priced = from_cpp;
      if (m.baseline() == GpuBaseline::bf16) priced.gpu_precision = GpuPrecision::kBf16;
      const StepCost cost = step->Cost(priced, ModelledAs(m.baseline(), cuda));
      row.measured_s = m.step_s();
      row.measured_j = m.step_j();
      row.model_s = cost.time_s;
      row.model_j = cost.energy_j;
      row.graph_nodes = m.graph_nodes();
      row.graph_kernels = m.graph_kernels();
      row.model_kernels = cost.kernels;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace hpt
