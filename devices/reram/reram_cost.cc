#include "devices/reram/reram_cost.h"

#include <algorithm>
#include <cmath>

namespace hpt {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t NextPowerOfTwo(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// --- Constants calibrated against DNN+NeuroSim V1.3 (commit 388f421, its
// --- Param.cpp defaults at 22 nm; runs and figures recorded in
// --- reram_cost_test.cc). NeuroSim derives them from circuit models; we
// --- take them from its component breakdown on single linear layers.

// "Chip clock period is: 2.03892ns": synchronous mode sets the clock by
// the sensing delay of a 128x128 subarray with 8:1 column muxing.
constexpr double kClockPeriodS = 2.03892e-9;
// Energy of one ADC conversion (NeuroSim's MultilevelSenseAmp plus its
// encoder, "ADC ... readDynamicEnergy") per column sum over a full
// 128-row subarray with uniform random 8-bit inputs and weights: 0.475 to
// 0.484 pJ over 24 shapes. A partly filled subarray (K not a multiple of
// 128) costs a fixed 16 % plus the rest in proportion to the rows summed
// (column current): fit to K = 160, 200 and 320 (14.8 to 16.8 %).
constexpr double kAdcConversionJ = 0.478e-12;
constexpr double kAdcFixedShare = 0.16;
// Shift-add and adder trees per conversion ("Accumulation Circuits"):
// 0.0416 to 0.0426 pJ.
constexpr double kAccumulationPerConversionJ = 0.042e-12;
// Decoders, multiplexers, switch matrices and level shifters per
// conversion ("Other Peripheries" less buffers and interconnect): 0.0493
// to 0.0506 pJ.
constexpr double kPeripheryPerConversionJ = 0.0497e-12;
// Buffers and H-tree: least squares over the 24 runs' "buffer" and "ic"
// energies (together 1 to 5 % of the total).
constexpr double kBufferPerInputBitJ = 0.0203e-12;
constexpr double kBufferPerOutputBitJ = 0.01515e-12 / 21.0;
constexpr double kTileWirePerInputBitJ = 0.0206e-12;   // x P / 128
constexpr double kGlobalWirePerBitJ = 0.1306e-12;      // x sqrt(tiles) P / 1024
// Global buffer organisation, Param.cpp: 128 x 128-bit cores
// (globalBufferCoreSizeRow/Col); tile buffers' lines are 32 bits
// (tileBufferCoreSizeCol).
constexpr double kGlobalBufferCoreBits = 128.0 * 128.0;
constexpr double kGlobalBufferLineBits = 128.0;
constexpr double kTileBufferLineBits = 32.0;
// Processing-element input registers: K_t / 46 cycles per vector before
// the in-tile speed-up (fit to the buffer latency left after the tile and
// global buffers; 1 % of the latency).
constexpr double kPeBufferRowsPerCycle = 46.0;
// H-tree span one clock covers, in cells of tile edge.
constexpr double kHtreeCellsPerCycle = 1024.0;

}  // namespace

double ReramClockPeriodS() { return kClockPeriodS; }

ReramFloorplan PlanReramLayer(const ReramConfig& config, int64_t k, int64_t n) {
  ReramFloorplan f;
  const int64_t sub_rows = config.crossbar_rows, sub_cols = config.crossbar_cols;
  f.cols_per_weight = CellsPerWeight(config);
  const int64_t cols = n * f.cols_per_weight;
  // ChipDesignInitialize: the largest PE is the next power of two of the
  // weight columns, at least two subarrays; ChipFloorPlan then halves it
  // while utilisation strictly improves.
  int64_t size = std::max(NextPowerOfTwo(cols), 2 * sub_rows);
  double best = 0;
  int64_t best_size = size;
  for (;;) {
    const double used = double(k) * double(cols);
    const double held = double(CeilDiv(k, size)) * double(CeilDiv(cols, size)) *
                        double(size) * double(size);
    if (used / held > best) {
      best = used / held;
      best_size = size;
    }
    size /= 2;
    if (size <= 2 * sub_rows) break;
  }
  f.tile_size = best_size;
  f.tile_rows = CeilDiv(k, f.tile_size);
  f.tile_cols = CeilDiv(cols, f.tile_size);
  f.tile_k = std::min(k, f.tile_size);
  f.tile_n = std::min(cols, f.tile_size) / f.cols_per_weight;
  // SubArrayDup: a layer narrower than its tile is copied into the free
  // subarrays.
  if (k <= f.tile_size || cols <= f.tile_size) {
    const int64_t per_tile_rows = f.tile_size / sub_rows;
    const int64_t per_tile_cols = f.tile_size / sub_cols;
    f.in_tile_copies = std::max<int64_t>(1, per_tile_rows / CeilDiv(k, sub_rows)) *
                       std::max<int64_t>(1, per_tile_cols / CeilDiv(cols, sub_cols));
  }
  f.subarrays = f.tiles() * (f.tile_size / sub_rows) * (f.tile_size / sub_cols);
  return f;
}

ReramReadCost ReramLayerReadCost(const ReramConfig& config, int64_t vectors,
                                 int64_t k, int64_t n, int64_t duplication) {
  ReramReadCost c;
  c.plan = PlanReramLayer(config, k, n);
  c.duplication = std::max<int64_t>(1, duplication);
  const ReramFloorplan& f = c.plan;
  const double bits = config.input_bits;
  const double mux = double(config.cols_per_adc);
  const double size = double(f.tile_size);
  const double tiles = double(f.tiles());
  const double sub_rows = double(config.crossbar_rows);
  // Copies read disjoint vectors; each copy sees its share.
  const double m = double(vectors);
  const double per_copy = std::ceil(m / double(c.duplication));
  const double inside = per_copy / double(f.in_tile_copies);
  // Adder width of a tile's partial sums (Tile.cpp accumulationNM):
  // ADC bits + input bits + columns per weight + 1 + log2(subarrays in K).
  const double adder_bits = std::ceil(std::log2(double(int64_t{1} << config.adc_bits))) +
                            bits + double(f.cols_per_weight) + 1 +
                            std::log2(size / sub_rows);

  // Cycles, by component.
  const double array_adc = inside * bits * mux;
  double accumulation =
      inside * bits *
      (mux + 2 + 0.5 * std::log2(double(CeilDiv(f.tile_k, config.crossbar_rows))));
  if (f.tile_rows > 1) {
    // Global accumulation (Chip.cpp Gaccumulation): every column of every
    // vector through an adder tree of depth log2(tiles along K), 32 trees.
    accumulation += std::ceil(double(n * f.cols_per_weight) * per_copy / 32.0) *
                    std::ceil(std::log2(double(f.tile_rows)));
  }
  const double tile_buffers =
      per_copy * (2.0 * double(f.tile_n) * (1 + adder_bits) / adder_bits +
                  double(f.tile_k) * bits / kTileBufferLineBits) +
      inside * double(f.tile_k) / kPeBufferRowsPerCycle;
  const double cores = std::ceil(bits * m * double(k) / kGlobalBufferCoreBits);
  const double bus_bits = size + size / mux;
  const double global_buffer =
      m * bits * double(k + n) / kGlobalBufferLineBits /
      std::min(cores, std::ceil(bus_bits / kGlobalBufferLineBits));
  const double interconnect =
      f.tiles() == 1 ? 0.0
                     : m * bits * double(k + n) / bus_bits *
                           std::ceil(std::sqrt(tiles) * size / kHtreeCellsPerCycle);
  // Activation units at the chip's edge, P / cols_per_adc of them.
  const double periphery = per_copy * double(n) / (size / mux);

  c.array_adc_s = array_adc * kClockPeriodS;
  c.accumulation_s = accumulation * kClockPeriodS;
  c.buffer_s = (tile_buffers + global_buffer) * kClockPeriodS;
  c.interconnect_s = interconnect * kClockPeriodS;
  c.periphery_s = periphery * kClockPeriodS;
  c.cycles = array_adc + accumulation + tile_buffers + global_buffer +
             interconnect + periphery;
  c.latency_s = c.cycles * kClockPeriodS;

  // Energy: every copy's conversions add up to the same total.
  const double cols = double(n * f.cols_per_weight);
  const int64_t row_blocks = CeilDiv(k, config.crossbar_rows);
  c.adc_conversions = vectors * config.input_bits * n * f.cols_per_weight * row_blocks;
  // Full subarrays, then the last one's share of rows.
  const double last_rows = double(k - (row_blocks - 1) * config.crossbar_rows);
  const double weighted_blocks =
      double(row_blocks - 1) + kAdcFixedShare + (1 - kAdcFixedShare) * last_rows / sub_rows;
  c.adc_j = m * bits * cols * weighted_blocks * kAdcConversionJ;
  c.accumulation_j = double(c.adc_conversions) * kAccumulationPerConversionJ;
  const double input_bits = m * bits * double(k);
  const double output_bits = m * double(n) * (1 + adder_bits);
  c.buffer_j = input_bits * kBufferPerInputBitJ + output_bits * kBufferPerOutputBitJ;
  c.interconnect_j =
      input_bits * kTileWirePerInputBitJ * size / 128.0 +
      (f.tiles() > 1 ? m * bits * double(k + n) * kGlobalWirePerBitJ *
                           std::sqrt(tiles) * size / 1024.0
                     : 0.0);
  c.periphery_j = double(c.adc_conversions) * kPeripheryPerConversionJ;
  c.energy_j = c.adc_j + c.accumulation_j + c.buffer_j + c.interconnect_j + c.periphery_j;
  return c;
}

int64_t ReramCrossbars(const ReramConfig& config, int64_t k, int64_t n) {
  return CeilDiv(k, config.crossbar_rows) * CeilDiv(n, config.crossbar_cols) *
         CellsPerWeight(config);
}

ReramWriteCost ReramProgramCost(const ReramConfig& config, int64_t k, int64_t n,
                                int64_t duplication) {
  ReramWriteCost report;
  report.cell_writes = k * n * CellsPerWeight(config) * duplication;
  const double pulse_energy =
      config.write_voltage_v * config.write_voltage_v / config.r_on_ohm * config.write_pulse_s;
  report.energy_j = double(report.cell_writes) * config.write_pulses_per_cell * pulse_energy;
  // Row by row within a subarray (all columns of a row at once), each pulse
  // followed by a verify read; the subarrays of a tile share its write
  // drivers and take turns, tiles (and copies) are written at once.
  const ReramFloorplan plan = PlanReramLayer(config, k, n);
  const int64_t per_tile =
      std::min(ReramCrossbars(config, k, n),
               (plan.tile_size / config.crossbar_rows) * (plan.tile_size / config.crossbar_cols));
  report.latency_s = double(per_tile) * double(std::min(k, config.crossbar_rows)) *
                     config.write_pulses_per_cell *
                     (config.write_pulse_s + config.read_pulse_s);
  return report;
}

}  // namespace hpt
