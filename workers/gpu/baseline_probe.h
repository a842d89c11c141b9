// ProbeBaselines: a model's full training step timed for real under each
// GPU baseline, on a scratch model of the job's shape (random weights and
// batch: a step's time does not depend on the values), so no job's state
// is touched. Each baseline runs `warm_up` steps, then `steps` timed ones;
// the figure is the median step and the mean energy a step.
//
//   paper  eager, per-parameter Adam (LibTorch's torch::optim::Adam), from
//          C++: the paper's step without Python's per-op layer;
//   fused  eager, ATen's fused Adam (_fused_adam_, one kernel set for all
//          parameters);
//   graph  the whole step (forward, backward, fused Adam with its step
//          counts on the device) captured once as a CUDA graph and
//          replayed; CUDA only;
//   bf16   the graph step under bf16 autocast; on the CPU, the fused eager
//          step under the CPU's bf16 autocast (no graphs there).
//
//   ASSIGN_OR_RETURN(ProbeBaselinesResponse r, ProbeBaselines(request, "cuda:0", meter));
#ifndef HPT_WORKERS_BASELINE_PROBE_H_
#define HPT_WORKERS_BASELINE_PROBE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/worker_service.pb.h"
#include "workers/gpu/device_meter.h"

namespace hpt {

// The baselines a probe knows, in the report's order.
const std::vector<GpuBaseline::Name>& ProbedBaselines();

// Runs the probe on `device` ("cpu" or "cuda:N"), timing with `meter`.
// INVALID_ARGUMENT names the request's bad field; a baseline that cannot
// run here (graph without CUDA) comes back with its `not_run` reason.
absl::StatusOr<ProbeBaselinesResponse> ProbeBaselines(const ProbeBaselinesRequest& request,
                                                      const std::string& device,
                                                      DeviceMeter* meter);

}  // namespace hpt

#endif  // HPT_WORKERS_BASELINE_PROBE_H_
