// A roofline cost model of a named reference GPU, so that measured GPU
// steps and simulated ReRAM / systolic costs are compared on one footing:
// time = max(flops / peak, bytes / bandwidth) / efficiency, energy = board
// power at load over that time.
//
//   ASSIGN_OR_RETURN(GpuSpec v100, GpuPreset("v100"));
//   GpuCost c = RooflineCost(v100, GpuPrecision::kFp32, flops, bytes);
#ifndef HPT_DEVICES_GPU_ROOFLINE_H_
#define HPT_DEVICES_GPU_ROOFLINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hpt {

enum class GpuPrecision { kFp32, kTf32, kBf16 };

struct GpuSpec {
  std::string name;
  double fp32_flops = 0;   // FLOP/s, CUDA cores
  double tf32_flops = 0;   // FLOP/s, tensor cores (0: none)
  double bf16_flops = 0;   // FLOP/s, tensor cores, dense (fp16 on V100)
  double memory_bw = 0;    // bytes/s
  double load_power_w = 0;
  double idle_power_w = 0;
  // Share of peak a well-shaped kernel reaches (both compute and memory);
  // 0.7 is typical of large cuBLAS GEMMs and streaming kernels.
  double efficiency = 0.7;
};

absl::StatusOr<GpuSpec> GpuPreset(const std::string& name);  // v100 a100 h100
std::vector<std::string> GpuPresetNames();

struct GpuCost {
  double time_s = 0;
  double energy_j = 0;
  bool compute_bound = false;
};

GpuCost RooflineCost(const GpuSpec& gpu, GpuPrecision precision, double flops,
                     double bytes);

}  // namespace hpt

#endif  // HPT_DEVICES_GPU_ROOFLINE_H_
