#include "devices/reram/reram_chip.h"

#include <queue>

#include "absl/strings/str_cat.h"
#include "devices/reram/reram_cost.h"

namespace hpt {

int64_t ReramLayerTiles(const ReramConfig& config, const ReramChipConfig& chip,
                        int64_t k, int64_t n) {
  const int64_t subarrays = PlanReramLayer(config, k, n).subarrays;
  return (subarrays + chip.subarrays_per_tile - 1) / chip.subarrays_per_tile;
}

absl::StatusOr<std::vector<int64_t>> PlanDuplication(
    const ReramConfig& config, const ReramChipConfig& chip,
    const std::vector<ReramLayerDemand>& layers) {
  if (chip.tiles < 1 || chip.subarrays_per_tile < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reram chip needs positive tiles and subarrays per tile, got ",
        chip.tiles, " and ", chip.subarrays_per_tile));
  }
  std::vector<int64_t> copies(layers.size(), 1), size(layers.size());
  int64_t used = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const ReramLayerDemand& l = layers[i];
    if (l.k < 1 || l.n < 1 || l.vectors < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reram layer '", l.name, "' has shape ", l.k, " x ", l.n, " and ",
          l.vectors, " vectors"));
    }
    size[i] = ReramLayerTiles(config, chip, l.k, l.n);
    used += size[i];
  }
  if (used > chip.tiles) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the frozen layers need ", used, " ReRAM tiles and the chip has ",
        chip.tiles, " (", chip.subarrays_per_tile,
        " subarrays each): raise the chip's tiles or place fewer layers on ReRAM"));
  }
  auto read_s = [&](size_t i, int64_t d) {
    const ReramLayerDemand& l = layers[i];
    if (l.vectors == 0) return 0.0;
    return ReramLayerReadCost(config, l.vectors, l.k, l.n, d).latency_s;
  };
  // Max-heap of (seconds saved per tile by one more copy, layer).
  using Gain = std::pair<double, size_t>;
  std::priority_queue<Gain> heap;
  auto push = [&](size_t i) {
    if (copies[i] >= layers[i].vectors) return;  // a copy per vector at most
    const double saved = read_s(i, copies[i]) - read_s(i, copies[i] + 1);
    if (saved > 0) heap.push({saved / double(size[i]), i});
  };
  for (size_t i = 0; i < layers.size(); ++i) push(i);
  int64_t free_tiles = chip.tiles - used;
  while (!heap.empty()) {
    const size_t i = heap.top().second;
    heap.pop();
    if (size[i] > free_tiles) continue;  // a smaller layer may still fit
    free_tiles -= size[i];
    ++copies[i];
    push(i);
  }
  return copies;
}

}  // namespace hpt
