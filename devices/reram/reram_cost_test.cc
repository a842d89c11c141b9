// The ReRAM cost model against DNN+NeuroSim V1.3, and the chip's
// duplication.
//
// Reference runs. DNN+NeuroSim V1.3, github.com/neurosim/DNN_NeuroSim_V1.3
// at commit 388f421204cd97b0b980f79ce92d4b8c6e4c3d44 (2023-12-20),
// Inference_pytorch/NeuroSIM built with its makefile (g++ 12, -O3), Param.cpp
// unchanged except speedUpDegree = 1 (which only matters in pipeline mode;
// pipeline stays false, so the outputs are those of the defaults). One
// linear layer per run, as a 1x1 convolution over M positions:
//   NetWork.csv:  M,1,K,1,1,N,0,1
//   weight.csv:   K rows x N columns, uniform over the 256 8-bit levels of
//                 [-1, 1) (multiples of 2^-7, as wage_quantizer.Q writes them)
//   input.csv:    K rows x 8M columns of bits, vector-major, bit-minor
//                 (hook.py's layout), each bit a fair coin: inputs uniform
//                 over the unsigned 8-bit range
//   ./main NetWork.csv 8 8 weight.csv input.csv
// Figures are "layer1's readLatency" and "readDynamicEnergy", and the
// floorplan's "Speed-up of each layer" and "# of tile used". Every run
// printed "Chip clock period is: 2.03892ns". (A 640 x 320 layer made
// NeuroSim stop after its floorplan, as did several other shapes whose
// N x 4 is not a multiple of 512; those are left out.)
#include "devices/reram/reram_cost.h"

#include <cmath>

#include "devices/reram/reram_chip.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

struct NeuroSimRun {
  int64_t m, k, n;
  double latency_ns, energy_pj;
  int64_t speed_up, tiles;
};

// Each row is one run as described above.
constexpr NeuroSimRun kRuns[] = {
    {8, 128, 128, 5821.94, 19874.6, 4, 1},
    {57, 512, 512, 69197.4, 2.22458e+06, 1, 4},
    {8, 2048, 2048, 31177.9, 4.98303e+06, 1, 4},
    {256, 1024, 1024, 533159, 3.98718e+07, 1, 4},
    {57, 128, 2048, 54088.3, 2.34294e+06, 4, 16},
    {57, 2048, 128, 75752.2, 2.24896e+06, 1, 4},
    {2048, 256, 256, 1.7918e+06, 2.00725e+07, 2, 2},
    {128, 512, 1024, 166572, 1.00221e+07, 1, 8},
    {32, 1024, 256, 64048, 1.23779e+06, 1, 1},
    {1024, 128, 512, 759634, 1.02973e+07, 4, 4},
    {16, 128, 128, 11644.4, 39377.6, 4, 1},
    {16, 256, 256, 14311.8, 156584, 2, 2},
    {16, 128, 512, 12914.6, 161204, 4, 4},
    {16, 512, 128, 18672.1, 153809, 1, 1},
    {16, 256, 1024, 16416, 633933, 2, 8},
    {16, 1024, 256, 32060.2, 618446, 1, 1},
    {16, 128, 2048, 18511.5, 656394, 4, 16},
    {16, 2048, 128, 21263.9, 631862, 1, 4},
    {16, 768, 768, 30930.7, 1.40692e+06, 1, 3},
    {16, 384, 1536, 21033.1, 1.41281e+06, 1, 12},
    {64, 256, 256, 55995.6, 626209, 2, 2},
    {256, 128, 128, 179631, 629063, 4, 1},
    {16, 1024, 1024, 33381.5, 2.49498e+06, 1, 4},
    {16, 512, 2048, 22949.7, 2.50756e+06, 1, 16},
    {16, 2048, 512, 58906.9, 2.4745e+06, 1, 1},
    {16, 1536, 384, 24132.3, 1.41153e+06, 1, 9},
    {2048, 128, 128, 1.43705e+06, 5.03202e+06, 4, 1},
    {40, 320, 960, 47097.1, 1.94735e+06, 1, 8},
    {24, 200, 700, 22120.7, 554408, 2, 6},
    {300, 160, 450, 250999, 3.87351e+06, 2, 4},
    {512, 384, 384, 577967, 1.12836e+07, 1, 3},
    {33, 2000, 1000, 123805, 9.94493e+06, 1, 2},
    {1000, 256, 512, 896833, 1.97009e+07, 2, 4},
};

class ReramCostTest : public ::testing::TestWithParam<NeuroSimRun> {};

TEST_P(ReramCostTest, AgreesWithNeuroSimOnOneLayer) {
  const NeuroSimRun& run = GetParam();
  const ReramReadCost c = ReramLayerReadCost(ReramConfig(), run.m, run.k, run.n);
  EXPECT_EQ(c.plan.in_tile_copies, run.speed_up);
  EXPECT_EQ(c.plan.tiles(), run.tiles);
  // The bar asked of the model is 20 %; it holds 2 % and 8 %.
  EXPECT_NEAR(c.latency_s * 1e9 / run.latency_ns, 1.0, 0.02);
  EXPECT_NEAR(c.energy_j * 1e12 / run.energy_pj, 1.0, 0.08);
  EXPECT_NEAR(c.latency_s, c.array_adc_s + c.accumulation_s + c.buffer_s +
                               c.interconnect_s + c.periphery_s,
              1e-12 * c.latency_s);
  EXPECT_NEAR(c.energy_j, c.adc_j + c.accumulation_j + c.buffer_j +
                              c.interconnect_j + c.periphery_j,
              1e-12 * c.energy_j);
}

INSTANTIATE_TEST_SUITE_P(NeuroSimV13, ReramCostTest, ::testing::ValuesIn(kRuns));

TEST(ReramCostComponentsTest, SensingTakesColumnsPerAdcCyclesPerInputBit) {
  // 57 x 512 x 512: NeuroSim's "ADC ... readLatency is : 7438ns" is
  // 57 vectors x 8 bits x 8 columns per ADC x 2.03892 ns.
  const ReramReadCost c = ReramLayerReadCost(ReramConfig(), 57, 512, 512);
  EXPECT_NEAR(c.array_adc_s, 57 * 8 * 8 * 2.03892e-9, 1e-15);
  EXPECT_NEAR(c.array_adc_s * 1e9, 7438.0, 1.0);
  // "Accumulation Circuits ... readLatency is : 10227.2ns".
  EXPECT_NEAR(c.accumulation_s * 1e9, 10227.2, 1.0);
  // Conversions: 57 vectors x 8 bits x 2048 columns x 4 subarrays along K.
  EXPECT_EQ(c.adc_conversions, 57LL * 8 * 2048 * 4);
  // "ADC ... readDynamicEnergy is : 1.79107e+06pJ".
  EXPECT_NEAR(c.adc_j * 1e12 / 1.79107e6, 1.0, 0.01);
}

TEST(ReramCostComponentsTest, FloorplanFollowsNeuroSim) {
  // 512 x 512 at 2 bits a cell: 2048 columns; P = 512 maximises
  // utilisation (1.0), four tiles of 16 subarrays.
  const ReramFloorplan f = PlanReramLayer(ReramConfig(), 512, 512);
  EXPECT_EQ(f.cols_per_weight, 4);
  EXPECT_EQ(f.tile_size, 512);
  EXPECT_EQ(f.tile_rows, 1);
  EXPECT_EQ(f.tile_cols, 4);
  EXPECT_EQ(f.subarrays, 64);
  // 128 x 128 fills a quarter of its 512 x 512 tile: four copies.
  EXPECT_EQ(PlanReramLayer(ReramConfig(), 128, 128).in_tile_copies, 4);
  // A differential pair doubles the columns.
  ReramConfig differential;
  differential.sign_mode = SignMode::kDifferential;
  EXPECT_EQ(PlanReramLayer(differential, 512, 512).cols_per_weight, 8);
}

TEST(ReramCostComponentsTest, TransposedShapeCostsItsOwnFloorplan) {
  const ReramReadCost forward = ReramLayerReadCost(ReramConfig(), 32, 2048, 128);
  const ReramReadCost transposed = ReramLayerReadCost(ReramConfig(), 32, 128, 2048);
  EXPECT_NE(forward.latency_s, transposed.latency_s);
}

TEST(ReramChipTest, LatencyFallsWithCopiesAsNeuroSimsSpeedUpDoes) {
  // NeuroSim's own duplication: 128 x 128 holds four copies in its tile
  // and reads in 11644 ns for 16 vectors; the same layer in a tile of its
  // own size would take the array and tile-buffer time four times over.
  const ReramConfig config;
  double previous = 1e30;
  for (int64_t copies : {1, 2, 4, 8, 16}) {
    const ReramReadCost c = ReramLayerReadCost(config, 512, 512, 512, copies);
    EXPECT_LT(c.latency_s, previous) << copies;
    // The global buffer and H-tree move the same bits: never divided.
    const ReramReadCost one = ReramLayerReadCost(config, 512, 512, 512, 1);
    if (copies > 1) {
      EXPECT_GT(c.latency_s, one.latency_s / double(copies)) << copies;
    }
    // Energy does not depend on where the vectors are read.
    EXPECT_NEAR(c.energy_j, one.energy_j, 1e-9 * one.energy_j);
    previous = c.latency_s;
  }
}

TEST(ReramChipTest, PlannerFillsFreeTilesAndCountsEveryCopy) {
  const ReramConfig config;
  ReramChipConfig chip;
  chip.tiles = 64;
  // Two 512 x 512 layers (4 tiles each) read by 1824 vectors a step, and
  // a small one read rarely.
  std::vector<ReramLayerDemand> layers = {
      {"a", 512, 512, 1824}, {"b", 512, 512, 1824}, {"c", 128, 128, 8}};
  auto copies = PlanDuplication(config, chip, layers);
  ASSERT_TRUE(copies.ok()) << copies.status();
  int64_t tiles = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    tiles += (*copies)[i] * ReramLayerTiles(config, chip, layers[i].k, layers[i].n);
  }
  EXPECT_LE(tiles, chip.tiles);
  EXPECT_GE(tiles, chip.tiles - 4);  // no copy that fits is left out
  EXPECT_LE(std::abs((*copies)[0] - (*copies)[1]), 1);  // alike layers alike
  EXPECT_GT((*copies)[0], 4);
  EXPECT_LE((*copies)[2], 8);
  // The planned copies read faster than one copy each.
  EXPECT_LT(ReramLayerReadCost(config, 1824, 512, 512, (*copies)[0]).latency_s,
            0.5 * ReramLayerReadCost(config, 1824, 512, 512, 1).latency_s);
}

TEST(ReramChipTest, LayersThatDoNotFitAreResourceExhausted) {
  ReramChipConfig chip;
  chip.tiles = 3;
  auto copies = PlanDuplication(ReramConfig(), chip, {{"big", 512, 512, 10}});
  EXPECT_EQ(copies.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(copies.status().message()).find("need 4 ReRAM tiles"),
            std::string::npos)
      << copies.status();
}

}  // namespace
}  // namespace hpt
