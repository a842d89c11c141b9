#include "devices/gpu/kernel_cost.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(GpuKernelCostTest, EachKernelPaysTheLargestOfLaunchComputeAndMemory) {
  const GpuSpec v100 = *GpuPreset("v100");
  const GpuKernelModel m;
  // A 4096^3 GEMM is compute-bound: 2 * 4096^3 FLOPs at 90.6 % of 15.7 TF.
  const double gemm_flops = 2.0 * 4096 * 4096 * 4096, gemm_bytes = 3.0 * 4096 * 4096 * 4;
  // A 64 MB copy is memory-bound; a 10-element add is launch-bound.
  const std::vector<GpuKernel> kernels = {{"aten::mm", gemm_flops, gemm_bytes},
                                          {"aten::copy_", 0, 2 * 64e6},
                                          {"aten::add", 10, 120},
                                          {"aten::view", 0, 0}};
  const GpuStepCost c = CostKernels(v100, GpuPrecision::kFp32, kernels, m);
  const double gemm_s = gemm_flops / (15.7e12 * 0.906);
  const double copy_s = 2 * 64e6 / (900e9 * 0.92);
  EXPECT_EQ(c.kernels, 3);  // the view launches nothing
  EXPECT_EQ(c.launch_bound_kernels, 1);
  EXPECT_DOUBLE_EQ(c.launch_bound_s, 5e-6);
  EXPECT_NEAR(c.time_s, gemm_s + copy_s + 5e-6, 1e-15);
  // Idle power throughout, the rest while kernels work.
  EXPECT_NEAR(c.energy_j, 40 * c.time_s + 260 * (gemm_s + copy_s + 10 * 0 + 120 / (900e9 * 0.92)),
              1e-12);
}

TEST(GpuKernelCostTest, ViewsLaunchNothing) {
  EXPECT_TRUE(LaunchesNoKernel("aten::transpose"));
  EXPECT_TRUE(LaunchesNoKernel("aten::view"));
  EXPECT_FALSE(LaunchesNoKernel("aten::addmm"));
  EXPECT_FALSE(LaunchesNoKernel("aten::copy_"));
}

}  // namespace
}  // namespace hpt
