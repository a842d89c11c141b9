// Read cost of one linear layer in ReRAM crossbars, structured as
// DNN+NeuroSim V1.3 computes it (Chip.cpp, Tile.cpp, ProcessingUnit.cpp,
// SubArray.cpp) and calibrated against its runs:
//
//   floorplan   NeuroSim's own for a lone layer: tile edge P chosen to
//               maximise utilisation, one processing element per tile,
//               (P/128)^2 subarrays; a layer smaller than its tile is
//               copied into the free subarrays (NeuroSim's "speed-up").
//   array+ADC   per input vector and input bit, every column of every
//               subarray is sensed; cols_per_adc columns share one ADC, so
//               a read takes cols_per_adc sensing cycles.
//   accumulate  shift-add of the bit-serial partial sums and the adder
//               tree over the subarrays along K; tiles along K are summed
//               by the chip's global accumulation.
//   buffers     tile input and output buffers (one line per cycle, as
//               NeuroSim's synchronous mode counts them) and the global
//               buffer, whose cores and bus width bound its bandwidth.
//   interconnect the H-tree between the global buffer and the tiles.
//
// All latencies are cycles of NeuroSim's synchronous clock. Copies of the
// weights (duplication, reram_chip.h) read disjoint input vectors at once:
// everything inside the tiles divides by the copies; the global buffer and
// the H-tree move the same bits and do not.
//
//   ReramReadCost c = ReramLayerReadCost(ReramConfig(), /*vectors=*/57,
//                                        /*k=*/512, /*n=*/512);
//   // c.latency_s ~ 69 us, c.energy_j ~ 2.2 uJ (NeuroSim: 69.2 us, 2.22 uJ)
#ifndef HPT_DEVICES_RERAM_RERAM_COST_H_
#define HPT_DEVICES_RERAM_RERAM_COST_H_

#include <cstdint>

#include "devices/reram/reram_config.h"

namespace hpt {

// NeuroSim V1.3's floorplan of one K x N layer mapped alone (novel mapping
// of a 1x1 layer; Chip.cpp ChipFloorPlan, SubArrayDup).
struct ReramFloorplan {
  int64_t cols_per_weight = 0;      // cells along a row per weight
  int64_t tile_size = 0;            // P: tile edge in cells
  int64_t tile_rows = 0;            // tiles along K
  int64_t tile_cols = 0;            // tiles along the weight columns
  int64_t tile_k = 0;               // weight rows per tile
  int64_t tile_n = 0;               // weights per tile along N
  int64_t in_tile_copies = 1;       // NeuroSim's speed-up: copies in a tile
  int64_t subarrays = 0;            // subarrays the layer occupies
  int64_t tiles() const { return tile_rows * tile_cols; }
};

ReramFloorplan PlanReramLayer(const ReramConfig& config, int64_t k, int64_t n);

struct ReramReadCost {
  double latency_s = 0;
  double energy_j = 0;
  // Latency by component (sum = latency_s) ...
  double array_adc_s = 0, accumulation_s = 0, buffer_s = 0,
         interconnect_s = 0, periphery_s = 0;
  // ... and energy (sum = energy_j).
  double adc_j = 0, accumulation_j = 0, buffer_j = 0, interconnect_j = 0,
         periphery_j = 0;
  int64_t adc_conversions = 0;      // column sums digitised
  double cycles = 0;                // latency_s in clock cycles
  int64_t duplication = 1;          // chip-level copies of the layer
  ReramFloorplan plan;
};

// `vectors` input vectors of length k through a k x n layer held in
// `duplication` copies (1: as NeuroSim maps it alone).
ReramReadCost ReramLayerReadCost(const ReramConfig& config, int64_t vectors,
                                 int64_t k, int64_t n, int64_t duplication = 1);

// Crossbars holding one copy of a K x N layer's cells.
int64_t ReramCrossbars(const ReramConfig& config, int64_t k, int64_t n);

// Programming a K x N layer into `duplication` copies: every mapped cell
// of every copy written once (reram_layer.h, "Writes").
struct ReramWriteCost {
  int64_t cell_writes = 0;
  double energy_j = 0;
  double latency_s = 0;
};
ReramWriteCost ReramProgramCost(const ReramConfig& config, int64_t k, int64_t n,
                                int64_t duplication);

// The clock NeuroSim's synchronous mode derives from the sensing delay at
// Param.cpp defaults; every run we made printed it.
double ReramClockPeriodS();

}  // namespace hpt

#endif  // HPT_DEVICES_RERAM_RERAM_COST_H_
