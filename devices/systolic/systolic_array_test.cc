#include "devices/systolic/systolic_array.h"

#include <random>

#include "gtest/gtest.h"

namespace hpt {
namespace {

struct Row {
  const char* name;
  int64_t rows, cols;
  Dataflow dataflow;
  int64_t m, n, k;
  // Expected values, worked out by hand from SCALE-Sim's model (see the
  // header): rows per fold, folds, and the per-fold sums written out.
  int64_t total_cycles;
  double mapping_pct, compute_util_pct, overall_util_pct;
  int64_t ifmap_reads, filter_reads, ofmap_writes;
};

class SystolicTableTest : public ::testing::TestWithParam<Row> {};

TEST_P(SystolicTableTest, MatchesScaleSimModel) {
  const Row& row = GetParam();
  SystolicConfig c;
  c.rows = row.rows;
  c.cols = row.cols;
  c.dataflow = row.dataflow;
  SystolicReport r = SimulateGemm(c, {row.m, row.n, row.k});
  EXPECT_EQ(r.total_cycles, row.total_cycles);
  EXPECT_EQ(r.stall_cycles, 0);
  EXPECT_NEAR(r.mapping_eff_pct, row.mapping_pct, 1e-9);
  EXPECT_NEAR(r.compute_util_pct, row.compute_util_pct, 1e-9);
  EXPECT_NEAR(r.overall_util_pct, row.overall_util_pct, 1e-9);
  EXPECT_EQ(r.sram_ifmap_reads, row.ifmap_reads);
  EXPECT_EQ(r.sram_filter_reads, row.filter_reads);
  EXPECT_EQ(r.sram_ofmap_writes, row.ofmap_writes);
  EXPECT_EQ(r.macs, row.m * row.n * row.k);
}

INSTANTIATE_TEST_SUITE_P(
    Gemms, SystolicTableTest,
    ::testing::Values(
        // SCALE-Sim v2's own golden run (test/golden_trace, AlexNet conv1 as
        // a GEMM: M = 55*55, N = 96, K = 11*11*3; 32x32 WS). 36 folds of
        // 3025 + 64 + 32 - 2 rows, minus one.
        Row{"alexnet_conv1_ws", 32, 32, Dataflow::kWeightStationary, 3025, 96,
            363, 112283, 94.53125, 90.78000992063492, 91.68309650614964,
            3294225, 34848, 3484800},
        // One full fold: 4 + 4 + 4 - 2 = 10 rows -> 9 cycles; util 16*4 /
        // (16*10); ofmap 16 + (4 + 4).
        Row{"os_exact_fit", 4, 4, Dataflow::kOutputStationary, 4, 4, 4, 9, 100.0,
            40.0, 100.0 * 64 / (9 * 16), 16, 16, 24},
        // Partial folds: M 6 -> rows 4 + 2, N 5 -> cols 4 + 1; 4 folds of
        // 3 + 4 + 4 - 2 = 9 rows -> 35; used 16, 8, 4, 2.
        Row{"os_partial_folds", 4, 4, Dataflow::kOutputStationary, 6, 5, 3, 35,
            100.0 * 30 / 64, 100.0 * 90 / 576, 100.0 * 90 / (35 * 16), 36, 30,
            30 + 4 * 8},
        // K = 3 < 4 rows: 1 row fold, N 5 -> 2 col folds; 2 folds of
        // 6 + 8 + 4 - 2 = 16 rows -> 31; util cycles 6 + 8 + 8 - 3 = 19.
        Row{"ws_k_smaller_than_array", 4, 4, Dataflow::kWeightStationary, 6, 5,
            3, 31, 100.0 * 15 / 32, 100.0 * (72 + 18) / (16 * 19) / 2,
            100.0 * 90 / (31 * 16), 36, 15, 30},
        // IS: Sr = K = 3, Sc = M = 6 -> 2 col folds (4, 2), T = N = 5;
        // 2 folds of 5 + 8 + 4 - 2 = 15 rows -> 29; util cycles 18.
        Row{"is_partial_cols", 4, 4, Dataflow::kInputStationary, 6, 5, 3, 29,
            100.0 * 18 / 32, 100.0 * (60 + 30) / (16 * 18) / 2,
            100.0 * 90 / (29 * 16), 18, 30, 30},
        // M, N, K all smaller than an 8x8 array: 5 + 8 + 8 - 2 = 19 rows.
        Row{"os_all_smaller", 8, 8, Dataflow::kOutputStationary, 3, 2, 5, 18,
            100.0 * 6 / 64, 100.0 * 30 / (64 * 19), 100.0 * 30 / (18 * 64), 15,
            10, 6 + 16},
        // Rectangular array, WS, several folds both ways: Sr = K = 20 -> 3
        // row folds of 8 (8, 8, 4); Sc = N = 10 -> 2 col folds of 6 (6, 4);
        // T = M = 7. Rows/fold 7 + 16 + 6 - 2 = 27, 6 folds -> 161.
        // Used: 48, 48, 24, 32, 32, 16 = 200; util cycles 7+16+12-3 = 32.
        Row{"ws_rect_multi_fold", 8, 6, Dataflow::kWeightStationary, 7, 10, 20,
            161, 100.0 * 200 / 48 / 6, 100.0 * 200 * 7 / (48 * 32) / 6,
            100.0 * 1400 / (161 * 48), 2 * 7 * 20, 200, 3 * 7 * 10}),
    [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// SCALE-Sim v2 with finite DRAM bandwidth (InterfaceBandwidth USER).
// Reference runs: scalesim-project/scale-sim-v2 at commit 22f88b1
// (version 2.0.2, 2025-02-25), run from its source with Debian 12's Python
// 3.11 and numpy:
//   python -m scalesim.scale -c run.cfg -t gemm.csv -i gemm -p logs
// run.cfg: [architecture_presets] ArrayHeight R, ArrayWidth C,
// IfmapSramSzkB / FilterSramSzkB / OfmapSramSzkB as below, IfmapOffset 0,
// FilterOffset 10000000, OfmapOffset 20000000, Dataflow, Bandwidth B,
// MemoryBanks 1; [run_presets] InterfaceBandwidth: USER.
// gemm.csv: "Layer,M,N,K," then "l0,M,N,K,".
// Figures: COMPUTE_REPORT.csv "Total Cycles" and "Stall Cycles".
struct UserRun {
  int64_t rows, cols;
  Dataflow dataflow;
  int64_t m, n, k, bw, ifmap_kb, filter_kb, ofmap_kb;
  int64_t total_cycles, stall_cycles;
};

class ScaleSimUserTest : public ::testing::TestWithParam<UserRun> {};

TEST_P(ScaleSimUserTest, TotalAndStallCyclesMatchScaleSim) {
  const UserRun& run = GetParam();
  SystolicConfig c;
  c.rows = run.rows;
  c.cols = run.cols;
  c.dataflow = run.dataflow;
  c.dram_bw_words_per_cycle = double(run.bw);
  c.ifmap_sram_kb = run.ifmap_kb;
  c.filter_sram_kb = run.filter_kb;
  c.ofmap_sram_kb = run.ofmap_kb;
  c.sram_word_bytes = 1;  // SCALE-Sim's word
  ASSERT_TRUE(ValidateSystolicConfig(c).ok());
  const SystolicReport r = SimulateGemm(c, {run.m, run.n, run.k});
  EXPECT_EQ(r.total_cycles, run.total_cycles);
  EXPECT_EQ(r.stall_cycles, run.stall_cycles);
  // The compute part stays CALC mode's.
  c.dram_bw_words_per_cycle = 0;
  EXPECT_EQ(SimulateGemm(c, {run.m, run.n, run.k}).stall_cycles, 0);
}

// R, C, dataflow, M, N, K, B, ifmap / filter / ofmap kB, total, stall.
INSTANTIATE_TEST_SUITE_P(
    ScaleSimV2, ScaleSimUserTest,
    ::testing::ValuesIn(std::vector<UserRun>{
    {8, 8, Dataflow::kOutputStationary, 20, 12, 16, 4, 1, 1, 1, 179, 0},
    {8, 8, Dataflow::kWeightStationary, 20, 12, 16, 4, 1, 1, 1, 167, 0},
    {8, 8, Dataflow::kInputStationary, 20, 12, 16, 4, 1, 1, 1, 203, 0},
    {16, 16, Dataflow::kOutputStationary, 100, 60, 40, 1, 2, 2, 2, 35919, 33960},
    {16, 16, Dataflow::kWeightStationary, 100, 60, 40, 1, 2, 2, 2, 20539, 18788},
    {16, 16, Dataflow::kInputStationary, 100, 60, 40, 1, 2, 2, 2, 25773, 23548},
    {16, 8, Dataflow::kOutputStationary, 57, 128, 64, 2, 1, 4, 2, 90286, 84783},
    {16, 8, Dataflow::kWeightStationary, 57, 128, 64, 2, 1, 4, 2, 65299, 59220},
    {16, 8, Dataflow::kInputStationary, 57, 128, 64, 2, 1, 4, 2, 130314, 125003},
    {32, 32, Dataflow::kOutputStationary, 256, 128, 256, 2, 4, 4, 4, 523882, 513707},
    {32, 32, Dataflow::kWeightStationary, 256, 128, 256, 2, 4, 4, 4, 491063, 479864},
    {32, 32, Dataflow::kInputStationary, 256, 128, 256, 2, 4, 4, 4, 1082435, 1068228},
    {8, 16, Dataflow::kOutputStationary, 64, 96, 80, 3, 2, 1, 1, 115088, 110193},
    {8, 16, Dataflow::kWeightStationary, 64, 96, 80, 3, 2, 1, 1, 58862, 53223},
    {8, 16, Dataflow::kInputStationary, 64, 96, 80, 3, 2, 1, 1, 22175, 17136},
    {32, 16, Dataflow::kOutputStationary, 200, 64, 128, 8, 8, 8, 4, 19221, 14350},
    {32, 16, Dataflow::kWeightStationary, 200, 64, 128, 8, 8, 8, 4, 22190, 17743},
    {32, 16, Dataflow::kInputStationary, 200, 64, 128, 8, 8, 8, 4, 29008, 21625},
    {16, 16, Dataflow::kOutputStationary, 333, 50, 70, 1, 1, 1, 1, 879302, 870903},
    {16, 16, Dataflow::kWeightStationary, 333, 50, 70, 1, 1, 1, 1, 207871, 200292},
    }));

TEST(SystolicArrayTest, UserBandwidthMustBeWholeWords) {
  SystolicConfig c;
  c.dram_bw_words_per_cycle = 1.5;
  EXPECT_EQ(ValidateSystolicConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c.dram_bw_words_per_cycle = 2;
  EXPECT_TRUE(ValidateSystolicConfig(c).ok());
}

TEST(SystolicArrayTest, EnergyAddsMacSramAndDram) {
  SystolicConfig c;
  c.rows = c.cols = 4;
  SystolicReport r = SimulateGemm(c, {4, 4, 4});
  // 64 MACs * 4.6 pJ; SRAM (16 + 16 + 24) words * 4 B * 1.25 pJ; DRAM
  // (16 + 16 + 16) words * 4 B * 160 pJ.
  EXPECT_NEAR(r.energy_j, 64 * 4.6e-12 + 56 * 4 * 1.25e-12 + 48 * 4 * 160e-12,
              1e-18);
  EXPECT_NEAR(r.latency_s, 9e-9, 1e-15);
}

TEST(SystolicArrayTest, GemmIsRealAndBf16RoundsOperands) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uni(-1, 1);
  const int m = 5, n = 7, k = 9;
  std::vector<float> x(m * k), w(k * n), out(m * n);
  for (float& v : x) v = uni(rng);
  for (float& v : w) v = uni(rng);
  SystolicConfig c;
  SystolicGemm(c, x.data(), w.data(), m, n, k, out.data());
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double ref = 0, ref_bf16 = 0;
      for (int t = 0; t < k; ++t) {
        ref += double(x[i * k + t]) * w[t * n + j];
        ref_bf16 += double(RoundToBf16(x[i * k + t])) * RoundToBf16(w[t * n + j]);
      }
      EXPECT_NEAR(out[i * n + j], ref, 1e-5);
      float bf16_out[1];
      SystolicConfig b = c;
      b.precision = SystolicPrecision::kBf16;
      std::vector<float> o2(m * n);
      SystolicGemm(b, x.data(), w.data(), m, n, k, o2.data());
      EXPECT_NEAR(o2[i * n + j], ref_bf16, 1e-5);
      (void)bf16_out;
    }
  }
  // Ties round to even: 1 + 2^-8 -> 1; 1 + 3*2^-8 -> 1 + 2^-6.
  EXPECT_EQ(RoundToBf16(1.00390625f), 1.0f);
  EXPECT_EQ(RoundToBf16(1.01171875f), 1.015625f);
}

TEST(SystolicArrayTest, BadConfigIsRejected) {
  SystolicConfig c;
  c.rows = 0;
  EXPECT_EQ(ValidateSystolicConfig(c).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseDataflow("xs").ok());
  EXPECT_EQ(*ParseDataflow("is"), Dataflow::kInputStationary);
}

}  // namespace
}  // namespace hpt
