// The last-level cache a calibrated profile's streamed rates use, on a
// CPU: what sysfs says, held to where the measured bandwidth falls off
// (a virtual machine's sysfs may give its host's whole cache). No LibTorch.
//
//   double cache = EffectiveCacheBytes(rates, CpuCaches().rbegin()->second, l2);
#ifndef HPT_WORKERS_CALIBRATE_CACHE_SIZE_H_
#define HPT_WORKERS_CALIBRATE_CACHE_SIZE_H_

#include <map>
#include <utility>
#include <vector>

namespace hpt {

// The CPU's caches from sysfs (cpu0's): bytes by level, of its data or
// unified cache; empty where sysfs has none.
std::map<int, double> CpuCaches();

// An element-wise op runs from cache while its rate is at least this many
// times its rate on the largest working set (memory): a threshold of this
// detection, not a device constant.
inline constexpr double kCacheRateOverMemory = 1.5;

// The cache a working set still runs in, from the element-wise bandwidth
// by bytes moved (MemoryRates, ascending): a virtual machine's sysfs may
// report its host's whole last-level cache (this project's CI VMs: 480
// MiB for 2 vCPUs, whose rate falls from 22 to 7 GB/s between 34 and 134
// MB). The largest size still at cache speed (kCacheRateOverMemory) with
// every larger one below it is the knee; the cache is the geometric
// midpoint of it and the next size, at most `last_level_bytes` (0:
// unknown). A knee at or under `next_level_bytes` (the L2) is that
// level's: then, and on a flat curve, `last_level_bytes` stands.
double EffectiveCacheBytes(const std::vector<std::pair<double, double>>& memory_rates,
                           double last_level_bytes, double next_level_bytes);

}  // namespace hpt

#endif  // HPT_WORKERS_CALIBRATE_CACHE_SIZE_H_
