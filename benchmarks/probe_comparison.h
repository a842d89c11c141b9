// A device's profile against the same device's real steps: the baseline
// probe (workers/gpu/baseline_probe.h) runs a preset's full training step for
// real under each GPU baseline on the device, and the cost model prices
// the same step, recorded, on the profile under that baseline's path. On a
// lent GPU this is the model-against-reality check on whatever GPU
// it is (tools/gpu_check.sh runs it); on the CPU it is the check's twin.
//
// The probe runs from C++, so each baseline is priced without Python's
// per-op cost (python_op_s 0): the probe's paper step is the model's
// libtorch path, its fused step the model's fused path from C++. On the
// CPU the probe's bf16 step is the fused one, eager, under autocast: it is
// set beside the model's fused path at bf16 (the model's bf16 baseline is
// a CUDA graph). Includes LibTorch (benchmarks only).
//
//   ProbeComparisonOptions o;
//   o.device = "cuda:0";
//   ASSIGN_OR_RETURN(std::vector<BaselineComparison> rows,
//                    CompareWithProbe(cost_config, o, meter.get()));
#ifndef HPT_BENCHMARKS_PROBE_COMPARISON_H_
#define HPT_BENCHMARKS_PROBE_COMPARISON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/recorded_step.h"
#include "devices/cost_settings.h"
#include "workers/gpu/device_meter.h"

namespace hpt {

struct ProbeComparisonOptions {
  std::string device = "cpu";  // cpu or cuda:N
  StepCase step{"wind", 1, 57};  // full parameters (the probe's phase)
  int64_t steps = 20, warm_up = 3;  // the probe's, for each baseline
};

// One baseline: the probe's median step beside the model's.
struct BaselineComparison {
  std::string baseline;  // paper, fused, graph, bf16
  std::string path;      // what the probe ran, in words
  std::string not_run;   // why no figures (the probe's reason, or why not compared)
  double measured_s = 0, model_s = 0;
  double measured_j = 0, model_j = 0;  // measured_j 0: no energy counter
  // A graph baseline on CUDA: the captured step's nodes and kernels (0:
  // not counted), beside the kernels the model priced.
  int64_t graph_nodes = 0, graph_kernels = 0, model_kernels = 0;
  double ratio() const { return model_s / measured_s; }
  double energy_ratio() const { return measured_j > 0 ? model_j / measured_j : 0; }
};

// The probe on o.device, then the model (config's reference GPU, usually
// the device's own calibrated profile) for each baseline the probe knows.
// INVALID_ARGUMENT names a bad option; the probe's failures pass through.
absl::StatusOr<std::vector<BaselineComparison>> CompareWithProbe(
    const DeviceCostConfig& config, const ProbeComparisonOptions& o, DeviceMeter* meter);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_PROBE_COMPARISON_H_
