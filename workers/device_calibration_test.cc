// Calibration on the CPU: the profile has what the kernel model needs, from
// microbenchmarks alone (how well it predicts whole steps is
// benchmarks/cpu_profile_check's question).
#include "workers/device_calibration.h"

#include <cstdio>

#include "devices/gpu/kernel_cost.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(DeviceCalibrationTest, TheCpusProfileIsMeasuredAndRoundTrips) {
  CalibrationOptions options;
  options.quick = true;
  std::vector<std::string> stages;
  options.progress = [&](const std::string& line) { stages.push_back(line); };
  absl::StatusOr<GpuSpec> profile = CalibrateDevice(options);
  ASSERT_TRUE(profile.ok()) << profile.status();
  // Cache, dispatch, GEMM sizes, memory, GEMM shapes, attention, streamed
  // (where sysfs gives the cache); no CUDA stages.
  EXPECT_EQ(stages.size(), profile->cache_bytes > 0 ? 7u : 6u);
  EXPECT_EQ(profile->gemm_grid.m(), (std::vector<int64_t>{8, 32, 128, 512, 2048}));
  EXPECT_EQ(profile->attention_grid.k(), (std::vector<int64_t>{8, 32, 128}));
  EXPECT_FALSE(profile->attention_backward_grid.empty());
  EXPECT_GE(profile->attention_call_s, 0);
  EXPECT_EQ(profile->gemm_grid_streamed.empty(), profile->cache_bytes <= 0);
  EXPECT_EQ(profile->memory_rates_streamed.empty(), profile->cache_bytes <= 0);
  EXPECT_TRUE(profile->synchronous);
  EXPECT_GT(profile->dispatch_s, 1e-8);
  EXPECT_LT(profile->dispatch_s, 1e-3);
  ASSERT_GE(profile->gemm_rates.size(), 3u);
  ASSERT_GE(profile->memory_rates.size(), 3u);
  EXPECT_EQ(profile->memory_bw, profile->memory_rates.back().second);
  // Sizes ascend and every rate is a real one (the order of the rates is
  // the machine's: under a loaded test run a large product can come out
  // slower than a small one, so no order is asserted).
  for (size_t i = 0; i < profile->gemm_rates.size(); ++i) {
    EXPECT_GT(profile->gemm_rates[i].second, 1e7) << i;  // above 10 MFLOP/s
    EXPECT_LT(profile->gemm_rates[i].second, 1e14) << i;
    if (i > 0) EXPECT_GT(profile->gemm_rates[i].first, profile->gemm_rates[i - 1].first);
  }
  EXPECT_EQ(profile->min_kernel_s, 0);
  EXPECT_EQ(profile->load_power_w, 0);  // no power counter on a CPU
  absl::StatusOr<GpuSpec> back = ParseGpuProfile(GpuProfileText(*profile));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->gemm_rates.size(), profile->gemm_rates.size());
  EXPECT_EQ(GemmGridText(back->gemm_grid), GemmGridText(profile->gemm_grid));
  EXPECT_NEAR(back->cache_bytes, profile->cache_bytes, 1e-5 * profile->cache_bytes);
  EXPECT_NEAR(back->dispatch_s, profile->dispatch_s, 1e-5 * profile->dispatch_s);
  std::printf("%s", GpuProfileText(*profile).c_str());
}

TEST(DeviceCalibrationTest, ABadDeviceIsNamed) {
  CalibrationOptions options;
  options.device = "tpu:0";
  absl::StatusOr<GpuSpec> profile = CalibrateDevice(options);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(profile.status().message().find("tpu:0"), std::string::npos);
}

// CPU twin of the CUDA path: asking for CUDA where there is none is a
// clear precondition failure, not a crash.
TEST(DeviceCalibrationTest, CudaWithoutCudaIsAPreconditionFailure) {
  CalibrationOptions options;
  options.device = "cuda:0";
  absl::StatusOr<GpuSpec> profile = CalibrateDevice(options);
  if (profile.ok()) GTEST_SKIP() << "not run: this machine has CUDA";
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(profile.status().message().find("no CUDA"), std::string::npos);
}

}  // namespace
}  // namespace hpt
