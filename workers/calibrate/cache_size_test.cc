#include "workers/calibrate/cache_size.h"

#include <cmath>

#include "gtest/gtest.h"

namespace hpt {
namespace {

// The element-wise rates (bytes moved, bytes/s) this project's CI VM
// measured on 2026-11-24 (hpt_calibrate --device=cpu, full mode): sysfs
// gives a 480 MiB L3 and a 2 MiB L2; the rate falls from 22.5 to 7.1 GB/s
// between 34 and 134 MB. The 524 kB point is LibTorch's first split over
// two threads, not a cache. Taken without the worker's heap policy
// (common/process_setup.h): its large buffers were fresh mappings, which
// on the AMD VM below streamed at a third of the heap's rate, so part of
// that fall may be the mappings'.
const std::vector<std::pair<double, double>> kVmRates = {
    {8192, 71.5e9},    {32768, 62.0e9},   {131072, 53.8e9},  {524288, 4.95e9}, {2.097e6, 12.3e9},
    {8.389e6, 17.8e9}, {3.355e7, 22.5e9}, {1.342e8, 7.07e9}, {5.369e8, 7.03e9}};
constexpr double kMiB = 1024.0 * 1024.0;

TEST(EffectiveCacheBytesTest, AVmsSysfsCacheGivesWayToTheMeasuredKnee) {
  // Between the last fast size (34 MB) and the next (134 MB): 67 MB.
  EXPECT_NEAR(EffectiveCacheBytes(kVmRates, 480 * kMiB, 2 * kMiB), std::sqrt(3.355e7 * 1.342e8), 1);
  // Without sysfs, the knee alone.
  EXPECT_NEAR(EffectiveCacheBytes(kVmRates, 0, 0), std::sqrt(3.355e7 * 1.342e8), 1);
}

// A third machine type (AMD EPYC family 26, 2 vCPUs, KVM), 2026-11-24,
// `hpt_calibrate --quick` with the worker's heap policy: sysfs gives a
// 32 MiB L3 and a 1 MiB L2, and the rate falls from 85.6 GB/s at 8.4 MB
// moved to 30.2 GB/s at 34 MB and 21.4 GB/s at 537 MB.
TEST(EffectiveCacheBytesTest, AVmGivenPartOfItsHostsL3) {
  const std::vector<std::pair<double, double>> rates = {
      {8192, 42.1e9},    {32768, 81.4e9},    {131072, 91.7e9},
      {524288, 127.5e9}, {2.097e6, 111.9e9}, {8.389e6, 85.6e9},
      {3.355e7, 30.2e9}, {1.342e8, 22.4e9},  {5.369e8, 21.4e9}};
  // 30.2 is under 1.5 x 21.4: the knee is 8.4 MB, the cache the midpoint
  // (in log terms) of it and 34 MB, 17 MB.
  EXPECT_NEAR(EffectiveCacheBytes(rates, 32 * kMiB, 1 * kMiB), std::sqrt(8.389e6 * 3.355e7), 1);
}

TEST(EffectiveCacheBytesTest, NeverMoreThanSysfs) {
  EXPECT_EQ(EffectiveCacheBytes(kVmRates, 32 * kMiB, 2 * kMiB), 32 * kMiB);
}

TEST(EffectiveCacheBytesTest, AFlatCurveKeepsSysfs) {
  // Every size in the last-level cache (or every one in memory).
  std::vector<std::pair<double, double>> flat;
  for (double bytes = 8192; bytes < 6e8; bytes *= 4) flat.push_back({bytes, 20e9});
  EXPECT_EQ(EffectiveCacheBytes(flat, 480 * kMiB, 2 * kMiB), 480 * kMiB);
  EXPECT_EQ(EffectiveCacheBytes({{8192, 5e9}}, 32 * kMiB, 0), 32 * kMiB);
}

TEST(EffectiveCacheBytesTest, AKneeAtTheL2IsTheL2s) {
  // A machine whose last-level cache holds every size measured: only the
  // L2 falls off, and the last level stands.
  const std::vector<std::pair<double, double>> rates = {
      {131072, 90e9},  {524288, 80e9},  {2.097e6, 60e9}, {8.389e6, 25e9},
      {3.355e7, 24e9}, {1.342e8, 23e9}, {5.369e8, 22e9}};
  EXPECT_EQ(EffectiveCacheBytes(rates, 768 * kMiB, 2 * kMiB), 768 * kMiB);
}

// This machine's sysfs, read: levels rise, and each size is a cache's
// (at least 4 KiB), where sysfs has any.
TEST(CpuCachesTest, LevelsHoldPlausibleSizes) {
  for (const auto& [level, bytes] : CpuCaches()) {
    EXPECT_GE(level, 1);
    EXPECT_LE(level, 4);
    EXPECT_GE(bytes, 4096) << "level " << level;
  }
}

}  // namespace
}  // namespace hpt
