#include "workers/calibrate/cache_size.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hpt {

std::map<int, double> CpuCaches() {
  std::map<int, double> caches;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    std::ifstream size_file(dir + "size"), level_file(dir + "level"), type_file(dir + "type");
    std::string size, type;
    int level = 0;
    if (!(size_file >> size) || size.empty() || !(level_file >> level)) continue;
    if ((type_file >> type) && type == "Instruction") continue;
    double scale = 1;
    if (size.back() == 'K') scale = 1024;
    if (size.back() == 'M') scale = 1024 * 1024;
    if (scale > 1) size.pop_back();
    double value = 0;
    if (absl::SimpleAtod(size, &value)) caches[level] = std::max(caches[level], value * scale);
  }
  return caches;
}

double EffectiveCacheBytes(const std::vector<std::pair<double, double>>& memory_rates,
                           double last_level_bytes, double next_level_bytes) {
  if (memory_rates.size() < 2) return last_level_bytes;
  const double slow = memory_rates.back().second;
  for (size_t i = memory_rates.size() - 1; i-- > 0;) {
    const auto& [bytes, rate] = memory_rates[i];
    if (rate < kCacheRateOverMemory * slow) continue;
    // The largest fast size: the cache is between it and the next size.
    if (bytes <= next_level_bytes) return last_level_bytes;  // the level below's knee
    const double knee = std::sqrt(bytes * memory_rates[i + 1].first);
    return last_level_bytes > 0 ? std::min(last_level_bytes, knee) : knee;
  }
  return last_level_bytes;
}

}  // namespace hpt
