// Calibration on the CPU: the profile has what the kernel model needs, from
// microbenchmarks alone (how well it predicts whole steps is
// benchmarks/cpu_profile_check's question).
#include "workers/calibrate/device_calibration.h"

#include <cmath>
#include <cstdio>

#include "devices/gpu/kernel_cost.h"
#include "gtest/gtest.h"
#include "workers/calibrate/host_calibration.h"

namespace hpt {
namespace {

TEST(DeviceCalibrationTest, TheCpusProfileIsMeasuredAndRoundTrips) {
  CalibrationOptions options;
  options.quick = true;
  std::vector<std::string> stages;
  options.progress = [&](const std::string& line) { stages.push_back(line); };
  absl::StatusOr<GpuSpec> profile = CalibrateDevice(options);
  ASSERT_TRUE(profile.ok()) << profile.status();
  // Host, GEMM sizes, bf16 products, memory, in place, cache, batched
  // products, layer norm, softmax, attention, GEMM shapes, streamed (where
  // the cache is known), host again; no CUDA stages.
  ASSERT_EQ(stages.size(), profile->cache_bytes > 0 ? 13u : 12u);
  EXPECT_EQ(stages.front().rfind("host per op", 0), 0u) << stages.front();
  EXPECT_NE(stages.back().find("at the start and the end"), std::string::npos) << stages.back();
  // bf16 products are measured, at whatever rate the CPU has for them (an
  // AMX Xeon: 1-2 TFLOP/s against 0.3 in fp32; one without: below fp32).
  EXPECT_GT(profile->bf16_flops, 1e8);
  EXPECT_LT(profile->bf16_flops, 1e15);
  EXPECT_EQ(profile->gemm_grid.m(), (std::vector<int64_t>{8, 32, 128, 512, 2048}));
  // Each layout has its own grid; the streamed one is measured as stored.
  EXPECT_EQ(profile->gemm_grid_nt.m(), profile->gemm_grid.m());
  EXPECT_EQ(profile->gemm_grid_tn.n(), profile->gemm_grid.n());
  ASSERT_EQ(profile->memory_rates_inplace.size(), 7u);  // 8 kB to 34 MB moved, by 4x
  EXPECT_GT(profile->frame_s, 1e-9);
  EXPECT_LT(profile->frame_s, 1e-3);
  // A view allocates and launches nothing: a fraction of a launch's
  // dispatch (0.24 against 1.1-1.2 us on the AMD EPYC VM, 2026-11-27).
  EXPECT_GT(profile->host_op_s, 1e-9);
  EXPECT_LT(profile->host_op_s, profile->dispatch_s);
  EXPECT_GE(profile->history_s, 0);
  EXPECT_LT(profile->history_s, 1e-3);
  EXPECT_GE(profile->node_s, 0);
  EXPECT_LT(profile->node_s, 1e-3);
  EXPECT_EQ(profile->attention_grid.k(), (std::vector<int64_t>{8, 32, 128}));
  EXPECT_FALSE(profile->attention_backward_grid.empty());
  EXPECT_EQ(profile->norm_grid.m(), (std::vector<int64_t>{16, 256, 4096}));  // rows
  EXPECT_EQ(profile->norm_backward_grid.n(), (std::vector<int64_t>{32, 256, 2048}));
  EXPECT_EQ(profile->softmax_grid.m(), (std::vector<int64_t>{16, 256, 4096}));
  EXPECT_EQ(profile->softmax_backward_grid.n(), (std::vector<int64_t>{32, 256, 2048}));
  // A batch's products by one product's m, k and n; none outruns the
  // best product rate measured.
  EXPECT_EQ(profile->gemm_grid_batched.k(), (std::vector<int64_t>{8, 32, 128}));
  EXPECT_LE(profile->gemm_grid_batched.BestRate(), profile->fp32_flops);
  EXPECT_GT(profile->gemm_grid_batched.Rate({128, 128, 128}), 1e7);
  EXPECT_GE(profile->attention_call_s, 0);
  EXPECT_EQ(profile->gemm_grid_streamed.empty(), profile->cache_bytes <= 0);
  EXPECT_EQ(profile->gemm_grid_streamed_result.empty(), profile->cache_bytes <= 0);
  EXPECT_EQ(profile->memory_rates_streamed.empty(), profile->cache_bytes <= 0);
  EXPECT_TRUE(profile->synchronous);
  EXPECT_GT(profile->dispatch_s, 1e-8);
  EXPECT_LT(profile->dispatch_s, 1e-3);
  ASSERT_GE(profile->gemm_rates.size(), 3u);
  ASSERT_EQ(profile->memory_rates.size(), 9u);  // 8 kB to 537 MB moved, by 4x
  EXPECT_LE(profile->cache_bytes, 4 * profile->memory_rates.back().first);
  EXPECT_EQ(profile->memory_bw, profile->memory_rates.back().second);
  // Sizes ascend and every rate is a real one (the order of the rates is
  // the machine's: under a loaded test run a large product can come out
  // slower than a small one, so no order is asserted).
  for (size_t i = 0; i < profile->gemm_rates.size(); ++i) {
    EXPECT_GT(profile->gemm_rates[i].second, 1e7) << i;  // above 10 MFLOP/s
    EXPECT_LT(profile->gemm_rates[i].second, 1e14) << i;
    if (i > 0) {
      EXPECT_GT(profile->gemm_rates[i].first, profile->gemm_rates[i - 1].first);
    }
  }
  EXPECT_EQ(profile->min_kernel_s, 0);
  EXPECT_EQ(profile->load_power_w, 0);  // no power counter on a CPU
  absl::StatusOr<GpuSpec> back = ParseGpuProfile(GpuProfileText(*profile));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->gemm_rates.size(), profile->gemm_rates.size());
  EXPECT_EQ(GemmGridText(back->gemm_grid), GemmGridText(profile->gemm_grid));
  EXPECT_NEAR(back->cache_bytes, profile->cache_bytes, 1e-5 * profile->cache_bytes);
  EXPECT_NEAR(back->dispatch_s, profile->dispatch_s, 1e-5 * profile->dispatch_s);
  EXPECT_NEAR(back->frame_s, profile->frame_s, 1e-5 * profile->frame_s);
  EXPECT_NEAR(back->host_op_s, profile->host_op_s, 1e-5 * profile->host_op_s);
  EXPECT_EQ(GemmGridText(back->gemm_grid_tn), GemmGridText(profile->gemm_grid_tn));
  EXPECT_EQ(GemmGridText(back->norm_grid), GemmGridText(profile->norm_grid));
  EXPECT_EQ(GemmGridText(back->softmax_backward_grid),
            GemmGridText(profile->softmax_backward_grid));
  EXPECT_EQ(GemmGridText(back->gemm_grid_batched), GemmGridText(profile->gemm_grid_batched));
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

// Of a set measured in a slow spell of the host and one measured outside
// it, the calibration keeps the latter whole, whichever came first.
TEST(DeviceCalibrationTest, TheLessDisturbedHostSetIsKeptWhole) {
  const HostCosts calm{1.25e-6, 0.3e-6, 0.5e-6, 0.45e-6, 2.1e-6};
  const HostCosts spell{2.3e-6, 0.28e-6, 0.9e-6, 0.8e-6, 3.6e-6};
  for (const HostCosts& kept : {LessDisturbed(calm, spell), LessDisturbed(spell, calm)}) {
    EXPECT_EQ(kept.dispatch_s, 1.25e-6);
    EXPECT_EQ(kept.host_op_s, 0.3e-6);  // not the spell's lesser view
    EXPECT_EQ(kept.history_s, 0.5e-6);
    EXPECT_EQ(kept.frame_s, 0.45e-6);
    EXPECT_EQ(kept.node_s, 2.1e-6);
  }
}

}  // namespace
}  // namespace hpt
