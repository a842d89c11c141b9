#include "common/gpu_baseline.h"

#include "common/enum_names.h"

namespace hpt {

absl::StatusOr<GpuBaseline::Name> ParseGpuBaseline(const std::string& name) {
  if (name.empty()) return GpuBaseline::paper;
  GpuBaseline::Name b = GpuBaseline::paper;
  absl::Status s = ParseEnumName("gpu_baseline", name, &b);
  if (!s.ok()) return s;
  return b;
}

std::string GpuBaselineName(GpuBaseline::Name baseline) {
  if (baseline == GpuBaseline::GPU_BASELINE_UNSPECIFIED || !GpuBaseline::Name_IsValid(baseline)) {
    baseline = GpuBaseline::paper;
  }
  return GpuBaseline::Name_Name(baseline);
}

std::vector<GpuBaseline::Name> AllGpuBaselines() {
  return {GpuBaseline::paper, GpuBaseline::libtorch, GpuBaseline::fused, GpuBaseline::graph,
          GpuBaseline::bf16};
}

}  // namespace hpt
