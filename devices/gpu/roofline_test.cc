#include "devices/gpu/roofline.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(RooflineTest, ComputeBoundGemmOnV100) {
  GpuSpec v100 = *GpuPreset("v100");
  // 1 TFLOP with 1 GB of traffic: 1e12 / 15.7e12 s vs 1e9 / 9e11 s.
  GpuCost c = RooflineCost(v100, GpuPrecision::kFp32, 1e12, 1e9);
  EXPECT_TRUE(c.compute_bound);
  EXPECT_NEAR(c.time_s, 1e12 / 15.7e12 / 0.7, 1e-12);
  EXPECT_NEAR(c.energy_j, c.time_s * 300, 1e-9);
}

TEST(RooflineTest, MemoryBoundKernelAndTensorCores) {
  GpuSpec h100 = *GpuPreset("h100");
  GpuCost c = RooflineCost(h100, GpuPrecision::kBf16, 1e9, 1e10);
  EXPECT_FALSE(c.compute_bound);
  EXPECT_NEAR(c.time_s, 1e10 / 3.35e12 / 0.7, 1e-12);
  GpuSpec a100 = *GpuPreset("a100");
  EXPECT_LT(RooflineCost(a100, GpuPrecision::kTf32, 1e12, 0).time_s,
            RooflineCost(a100, GpuPrecision::kFp32, 1e12, 0).time_s / 7);
  EXPECT_FALSE(GpuPreset("p100").ok());
}

}  // namespace
}  // namespace hpt
