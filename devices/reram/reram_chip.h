// A ReRAM chip: a stated number of tiles of 128x128 subarrays, shared by
// the frozen layers programmed into it. Free tiles hold copies of layers
// (weight duplication, NeuroSim's speed-up and MNSIM 2.0's replication) so
// that several input vectors are read at once; PlanDuplication chooses the
// copies that shorten a step's reads most for the tiles they take.
//
//   ReramChipConfig chip;  // ISAAC's capacity: 16,128 subarrays
//   ASSIGN_OR_RETURN(std::vector<int64_t> copies,
//                    PlanDuplication(ReramConfig(), chip, layers));
#ifndef HPT_DEVICES_RERAM_RERAM_CHIP_H_
#define HPT_DEVICES_RERAM_RERAM_CHIP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/reram/reram_config.h"

namespace hpt {

struct ReramChipConfig {
  // ISAAC (Shafiee et al., ISCA 2016, Table 6): 168 tiles x 12 in-situ
  // multiply-accumulate units x 8 crossbars of 128x128 = 16,128 crossbars.
  // We count them as NeuroSim's smallest tile (Chip.cpp: 4 x 128 cells a
  // side, 16 subarrays): 1,008 tiles.
  int64_t tiles = 1008;
  int64_t subarrays_per_tile = 16;
  int64_t subarrays() const { return tiles * subarrays_per_tile; }
};

// One frozen layer of a step: its shape and the input vectors it reads per
// step (forward and transposed reads together).
struct ReramLayerDemand {
  std::string name;
  int64_t k = 0, n = 0;
  int64_t vectors = 0;
};

// Tiles (of subarrays_per_tile) one copy of a k x n layer occupies.
int64_t ReramLayerTiles(const ReramConfig& config, const ReramChipConfig& chip,
                        int64_t k, int64_t n);

// Copies per layer (each >= 1, at most its vectors). Greedy on the read
// time saved per tile: optimal for this separable convex problem up to
// the granularity of a tile. RESOURCE_EXHAUSTED, naming the shortfall,
// when one copy of every layer does not fit.
absl::StatusOr<std::vector<int64_t>> PlanDuplication(
    const ReramConfig& config, const ReramChipConfig& chip,
    const std::vector<ReramLayerDemand>& layers);

}  // namespace hpt

#endif  // HPT_DEVICES_RERAM_RERAM_CHIP_H_
