// The GPU-only baselines HpT is judged against (proto/work.proto's
// GpuBaseline): the one list of them, their names as settings, reports and
// pages write them, and the one parse from text. What each costs is
// devices/work_cost.h's.
//
//   ASSIGN_OR_RETURN(GpuBaseline::Name b, ParseGpuBaseline("fused"));
//   GpuBaselineName(b);  // "fused"
#ifndef HPT_COMMON_GPU_BASELINE_H_
#define HPT_COMMON_GPU_BASELINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/work.pb.h"

namespace hpt {

// `name` as a baseline ("" is paper, the default); INVALID_ARGUMENT naming
// gpu_baseline and the names allowed.
absl::StatusOr<GpuBaseline::Name> ParseGpuBaseline(const std::string& name);
// "paper", "libtorch", "fused", "graph", "bf16"; GPU_BASELINE_UNSPECIFIED
// (and a number without a name) is paper, the default.
std::string GpuBaselineName(GpuBaseline::Name baseline);
// Every baseline, in the order reports list them.
std::vector<GpuBaseline::Name> AllGpuBaselines();

}  // namespace hpt

#endif  // HPT_COMMON_GPU_BASELINE_H_
