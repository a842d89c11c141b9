// GPU cost of the kernels a LibTorch step really ran, on a reference GPU.
// Each kernel costs max(launch overhead, FLOPs / achieved compute, bytes /
// achieved bandwidth); ops that launch no kernel (views, metadata) cost
// nothing. Energy: the board's idle power over the whole time plus the
// rest of its load power over the time each kernel is busy computing or
// moving data (a launch-bound kernel leaves the SMs idle).
//
//   std::vector<GpuKernel> kernels = recorder.Finish();   // workers/
//   GpuStepCost c = CostKernels(*GpuPreset("v100"), GpuPrecision::kFp32, kernels);
//   // c.time_s, c.kernels, c.launch_bound_share()
#ifndef HPT_DEVICES_GPU_KERNEL_COST_H_
#define HPT_DEVICES_GPU_KERNEL_COST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devices/gpu/roofline.h"

namespace hpt {

// One ATen op that launches a kernel, with its work.
struct GpuKernel {
  std::string op;    // "aten::addmm"
  double flops = 0;
  double bytes = 0;  // operands read and results written
};

struct GpuKernelModel {
  // Per-kernel launch cost. Meta's Holistic Trace Analysis documentation
  // ("CUDA kernel launch statistics"): "the launch time on the CPU side is
  // between 5-20 microseconds"; we take the low end, which favours the GPU.
  double launch_s = 5e-6;
  // Achieved shares of peak, from the Empirical Roofline Toolkit on a V100
  // (Yang, Kurth and Williams, "Hierarchical Roofline analysis for GPUs",
  // CCPE 32(20), 2020): HBM 828 GB/s of 900 (0.92) and 7.07 TFLOP/s FP64
  // of 7.8 (0.906); the same shares are used for every preset and
  // precision.
  double compute_share = 0.906;
  double memory_share = 0.92;
};

struct GpuStepCost {
  double time_s = 0;
  double energy_j = 0;
  int64_t kernels = 0;
  int64_t launch_bound_kernels = 0;  // launch overhead above their work
  double launch_bound_s = 0;         // time those kernels took
  double flops = 0, bytes = 0;
  double launch_bound_share() const { return time_s > 0 ? launch_bound_s / time_s : 0; }
};

// Adds kernels up into a GpuStepCost, each costing max(launch_s, its
// work) on `gpu` at `precision`; Finish adds the energy. CostKernels and
// the recorded work's costing (devices/work_cost.h) both go through it.
class GpuKernelTally {
 public:
  GpuKernelTally(const GpuSpec& gpu, GpuPrecision precision, double launch_s,
                 const GpuKernelModel& model = GpuKernelModel());
  // `count` kernels of this work.
  void Add(double flops, double bytes, double count = 1);
  // `extra_s` of launch time beside the kernels (a graph's one launch).
  GpuStepCost Finish(double extra_s = 0) const;
  int64_t kernels() const { return cost_.kernels; }

 private:
  const GpuSpec& gpu_;
  double compute_ = 0, bandwidth_ = 0, launch_s_ = 0;
  double busy_s_ = 0;
  GpuStepCost cost_;
};

// True for ATen ops that only make views or read metadata.
bool LaunchesNoKernel(std::string_view op);

GpuStepCost CostKernels(const GpuSpec& gpu, GpuPrecision precision,
                        const std::vector<GpuKernel>& kernels,
                        const GpuKernelModel& model = GpuKernelModel());

}  // namespace hpt

#endif  // HPT_DEVICES_GPU_KERNEL_COST_H_
