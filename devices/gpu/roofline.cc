#include "devices/gpu/roofline.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hpt {

std::vector<std::string> GpuPresetNames() { return {"v100", "a100", "h100"}; }

absl::StatusOr<GpuSpec> GpuPreset(const std::string& name) {
  GpuSpec g;
  g.name = name;
  if (name == "v100") {
    // NVIDIA Tesla V100 SXM2 datasheet: 15.7 TFLOP/s fp32, 125 TFLOP/s
    // tensor (fp16; bf16 does not exist on Volta), 900 GB/s HBM2, 300 W.
    g.fp32_flops = 15.7e12;
    g.bf16_flops = 125e12;
    g.memory_bw = 900e9;
    g.load_power_w = 300;
    g.idle_power_w = 40;  // assumed: datasheets give no idle figure (~13 %)
  } else if (name == "a100") {
    // NVIDIA A100 SXM4 40 GB datasheet: 19.5 TFLOP/s fp32, 156 TF32, 312
    // bf16 (dense), 1,555 GB/s HBM2, 400 W.
    g.fp32_flops = 19.5e12;
    g.tf32_flops = 156e12;
    g.bf16_flops = 312e12;
    g.memory_bw = 1555e9;
    g.load_power_w = 400;
    g.idle_power_w = 50;  // assumed, as above
  } else if (name == "h100") {
    // NVIDIA H100 SXM5 datasheet: 67 TFLOP/s fp32, 494.7 TF32 and 989.4
    // bf16 (dense, half the sparse figures), 3.35 TB/s HBM3, 700 W.
    g.fp32_flops = 67e12;
    g.tf32_flops = 494.7e12;
    g.bf16_flops = 989.4e12;
    g.memory_bw = 3.35e12;
    g.load_power_w = 700;
    g.idle_power_w = 70;  // assumed, as above
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu preset '", name, "' is unknown; choose one of ",
        absl::StrJoin(GpuPresetNames(), ", ")));
  }
  return g;
}

GpuCost RooflineCost(const GpuSpec& gpu, GpuPrecision precision, double flops,
                     double bytes) {
  double peak = gpu.fp32_flops;
  if (precision == GpuPrecision::kTf32 && gpu.tf32_flops > 0) peak = gpu.tf32_flops;
  if (precision == GpuPrecision::kBf16 && gpu.bf16_flops > 0) peak = gpu.bf16_flops;
  const double compute_s = flops / peak;
  const double memory_s = bytes / gpu.memory_bw;
  GpuCost cost;
  cost.compute_bound = compute_s >= memory_s;
  cost.time_s = std::max(compute_s, memory_s) / gpu.efficiency;
  cost.energy_j = cost.time_s * gpu.load_power_w;
  return cost;
}

}  // namespace hpt
