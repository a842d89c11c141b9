#include "devices/gpu/kernel_cost.h"

#include <algorithm>
#include <cmath>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(GpuKernelCostTest, EagerKernelsPayTheLargerOfDispatchAndDeviceTime) {
  const GpuSpec v100 = *GpuPreset("v100");
  // A 4096^3 GEMM is compute-bound: 2 * 4096^3 FLOPs at 90.6 % of 15.7 TF.
  const double gemm_flops = 2.0 * 4096 * 4096 * 4096, gemm_bytes = 3.0 * 4096 * 4096 * 4;
  // A 64 MB copy is memory-bound; a 10-element add is launch-bound.
  const std::vector<GpuKernel> kernels = {{"aten::mm", gemm_flops, gemm_bytes},
                                          {"aten::copy_", 0, 2 * 64e6},
                                          {"aten::add", 10, 120},
                                          {"aten::view", 0, 0}};
  const GpuStepCost c = CostKernels(v100, GpuPrecision::kFp32, kernels);
  const double gemm_s = gemm_flops / (15.7e12 * 0.906);
  const double copy_s = 2 * 64e6 / (900e9 * 0.92);
  EXPECT_EQ(c.kernels, 3);  // the view launches nothing
  EXPECT_EQ(c.launch_bound_kernels, 1);
  EXPECT_DOUBLE_EQ(c.launch_bound_s, v100.dispatch_s);
  EXPECT_NEAR(c.time_s, gemm_s + copy_s + v100.dispatch_s, 1e-15);
  // A context's stepping power throughout (40 W idle and 36 W for the
  // context), the rest of the 300 W while kernels work.
  EXPECT_NEAR(c.energy_j, 76 * c.time_s + 224 * (gemm_s + copy_s + 120 / (900e9 * 0.92)),
              1e-12);
}

// Load power goes with a kernel's work at the board's full rate, not with
// the time a measured table gives it: an 8^3 product that its table says
// takes 10 us (a small kernel, latency-bound) holds the GPU that long but
// draws load power only for its roofline time.
TEST(GpuKernelCostTest, LoadPowerGoesWithWorkNotWithAMeasuredKernelsTime) {
  GpuSpec g = *GpuPreset("v100");
  const double flops = 2.0 * 8 * 8 * 8, bytes = 3.0 * 8 * 8 * 4;
  g.gemm_grid = *GemmGrid::Make({8}, {8}, {8}, {flops / 10e-6});
  GpuKernelTally tally(g, GpuPrecision::kFp32, GpuLaunch::kGraph);
  tally.Add(flops, bytes, 1, KernelKind::kGemm, GemmShape{8, 8, 8});
  const GpuStepCost c = tally.Finish();
  EXPECT_NEAR(c.time_s, 10e-6 + g.graph_node_s, 1e-12);
  const double full_rate_s = std::max(flops / (15.7e12 * 0.906), bytes / (900e9 * 0.92));
  EXPECT_LT(full_rate_s, 1e-8);
  EXPECT_NEAR(c.energy_j, 76 * c.time_s + 224 * full_rate_s, 1e-15);
}

// A CPU-like profile: synchronous, no dispatch, one rate per table.
GpuSpec TableProfile() {
  GpuSpec g = *ParseGpuProfile("name = t; fp32_flops = 1e12; memory_bw = 1e10; synchronous = true");
  g.compute_share = g.memory_share = 1;
  g.dispatch_s = 0;
  g.gemm_rates = {{1, 1e9}};                                   // by size: 1 GFLOP/s
  g.gemm_grid = *GemmGrid::Make({8}, {8}, {8}, {2e9});         // by shape: 2
  g.gemm_grid_streamed = *GemmGrid::Make({8}, {8}, {8}, {4e8});  // weights from memory
  g.memory_rates = {{1, 1e10}};
  g.memory_rates_streamed = {{1, 1e9}};
  g.attention_grid = *GemmGrid::Make({8}, {8}, {8}, {5e8});
  g.attention_call_s = 1e-6;
  g.cache_bytes = 1e6;
  return g;
}

TEST(GpuKernelCostTest, AProductWithAShapeTakesTheGridsRate) {
  const GpuSpec g = TableProfile();
  const GpuKernel sized{"aten::mm", 1e6, 1e3};
  GpuKernel shaped = sized;
  shaped.shape = GemmShape{64, 64, 64};
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {sized}).time_s, 1e-3);
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {shaped}).time_s, 0.5e-3);
  // Attention: its own grid, plus its fixed cost a call.
  GpuKernel attention{"aten::_scaled_dot_product_flash_attention_for_cpu", 1e6, 1e3};
  attention.shape = GemmShape{16, 16, 8};
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {attention}).time_s, 2e-3 + 1e-6);
  // A backward without a measured grid is rated as a product of its size.
  attention.op = "aten::_scaled_dot_product_flash_attention_for_cpu_backward";
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {attention}).time_s, 1e-3);
}

// The tables are fp32's. At bf16 a product keeps its shape's time beyond
// the table's best rate and does its work at the bf16 peak: a small,
// latency-bound product gains little, one at the table's best rate runs
// at the bf16 peak. A layer norm (fp32 under autocast) keeps its rate.
TEST(GpuKernelCostTest, ALowerPrecisionKeepsAShapesLatency) {
  GpuSpec g;
  g.fp32_flops = 1e12;
  g.bf16_flops = 8e12;
  g.compute_share = g.memory_share = 1;
  g.memory_bw = 1e10;
  g.synchronous = true;
  // 8^3 at 1e10 FLOP/s (latency-bound), 64^3 at the best, 4e11.
  g.gemm_grid = *GemmGrid::Make({8, 64}, {8, 64}, {8, 64},
                                {1e10, 1e10, 1e10, 1e10, 1e10, 1e10, 1e10, 4e11});
  g.norm_grid = *GemmGrid::Make({16}, {1}, {32}, {1e9});
  EXPECT_DOUBLE_EQ(g.gemm_grid.BestRate(), 4e11);
  auto time_s = [&](GpuPrecision p, const GemmShape& shape) {
    const double flops = 2.0 * double(shape.m) * double(shape.k) * double(shape.n);
    GpuKernel k{"aten::mm", flops, 1e3};
    k.shape = shape;
    return CostKernels(g, p, {k}).time_s;
  };
  const GemmShape small{8, 8, 8}, best{64, 64, 64};
  const double small_flops = 1024, best_flops = 2.0 * 64 * 64 * 64;
  EXPECT_DOUBLE_EQ(time_s(GpuPrecision::kFp32, small), small_flops / 1e10);
  EXPECT_DOUBLE_EQ(time_s(GpuPrecision::kBf16, small),
                   small_flops * (1 / 1e10 - 1 / 4e11 + 1 / 8e12));
  EXPECT_DOUBLE_EQ(time_s(GpuPrecision::kFp32, best), best_flops / 4e11);
  EXPECT_DOUBLE_EQ(time_s(GpuPrecision::kBf16, best), best_flops / 8e12);
  // No faster units: no gain (a CPU without bf16 products measures lower).
  g.bf16_flops = 2e11;
  EXPECT_DOUBLE_EQ(time_s(GpuPrecision::kBf16, best), best_flops / 2e11);
  GpuKernel norm{"aten::native_layer_norm", 16 * 32, 1e3};
  norm.shape = GemmShape{16, 32, 1};
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kBf16, {norm}).time_s, 16 * 32 / 1e9);
}

// A layer norm with a measured grid costs its elements at the grid's
// rate, whatever its bytes; without one (or without its shape), its bytes
// at the element-wise bandwidth.
TEST(GpuKernelCostTest, ALayerNormTakesItsGridsRate) {
  GpuSpec g = TableProfile();
  g.norm_grid = *GemmGrid::Make({16, 1024}, {1}, {32, 512}, {1e9, 2e9, 4e8, 8e8});
  GpuKernel norm{"aten::native_layer_norm", 1024 * 32, 1e3};
  norm.shape = GemmShape{1024, 32, 1};
  EXPECT_EQ(KernelKindOf(norm.op), KernelKind::kNorm);
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {norm}).time_s, 1024 * 32 / 4e8);
  norm.shape = GemmShape{128, 32, 1};  // between the rows: log-interpolated
  EXPECT_NEAR(CostKernels(g, GpuPrecision::kFp32, {norm}).time_s, 128 * 32 / std::sqrt(4e17),
              1e-12);
  GpuKernel backward = norm;
  backward.op = "aten::native_layer_norm_backward";
  EXPECT_EQ(KernelKindOf(backward.op), KernelKind::kNormBackward);
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {backward}).time_s, 1e3 / 1e10);
  // Without a rate for its shape the forward moves its input twice: 3/2
  // of the recorded bytes (its backward above, the bytes as recorded).
  norm.shape = GemmShape();
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {norm}).time_s, 1.5e3 / 1e10);
}

TEST(GpuKernelCostTest, StreamedReadsTakeTheStreamedRates) {
  const GpuSpec g = TableProfile();
  EXPECT_TRUE(StreamsState(g, 2e6));
  EXPECT_FALSE(StreamsState(g, 1e6));
  GpuKernelTally weights(g, GpuPrecision::kFp32, GpuLaunch::kEager, StreamedReads{true, false});
  weights.Add(1e6, 1e3, 1, KernelKind::kGemm, GemmShape{8, 8, 8});
  weights.Add(0, 1e6, 1);  // an activation: cached
  EXPECT_DOUBLE_EQ(weights.Finish().time_s, 1e6 / 4e8 + 1e6 / 1e10);
  GpuKernelTally state(g, GpuPrecision::kFp32, GpuLaunch::kEager, StreamedReads{true, true});
  state.Add(0, 1e6, 1);
  EXPECT_DOUBLE_EQ(state.Finish().time_s, 1e6 / 1e9);
}

// A weight gradient's product (g^T x: its first operand transposed)
// writes model state: streamed, it takes the grid measured with its
// result going to memory, where the profile has one; other products, and
// the same product in a task that does not stream, keep theirs.
TEST(GpuKernelCostTest, AStreamedWeightGradientTakesTheResultGrid) {
  GpuSpec g = TableProfile();
  g.gemm_grid_tn = *GemmGrid::Make({8}, {8}, {8}, {1e9});
  GemmShape gradient{8, 8, 8};
  gradient.a_transposed = true;
  auto product_s = [&](const GemmShape& shape, bool streamed) {
    GpuKernelTally t(g, GpuPrecision::kFp32, GpuLaunch::kEager, StreamedReads{streamed, false});
    t.Add(1e6, 1e3, 1, KernelKind::kGemm, shape);
    return t.Finish().time_s;
  };
  // No result grid: as the weights' products.
  EXPECT_DOUBLE_EQ(product_s(gradient, true), 1e6 / 4e8);
  g.gemm_grid_streamed_result = *GemmGrid::Make({8}, {8}, {8}, {2.5e8});
  EXPECT_DOUBLE_EQ(product_s(gradient, true), 1e6 / 2.5e8);
  EXPECT_DOUBLE_EQ(product_s(GemmShape{8, 8, 8}, true), 1e6 / 4e8);
  EXPECT_DOUBLE_EQ(product_s(gradient, false), 1e6 / 1e9);
  // Unfused attention's backward reads its first operand transposed too
  // (bmm), but writes an activation's gradient: the weights' grid.
  GpuKernelTally batched(g, GpuPrecision::kFp32, GpuLaunch::kEager, StreamedReads{true, false});
  batched.Add(1e6, 1e3, 1, KernelKindOf("aten::bmm"), gradient);
  EXPECT_DOUBLE_EQ(batched.Finish().time_s, 1e6 / 4e8);
}

// A batch of B products of m x k x n runs the tiles of one product of
// B m rows, read off the grid there, not B products each at a lone
// product's rate; and it moves its operands at least at the element-wise
// bandwidth, each product reading its own.
TEST(GpuKernelCostTest, ABatchOfProductsRunsAsOneProductOfItsRows) {
  GpuSpec g = TableProfile();
  g.gemm_grid = *GemmGrid::Make({8, 8192}, {8}, {8}, {1e8, 4e9});
  const double one = 2.0 * 8 * 8 * 8;
  auto batch_s = [&](double flops, double bytes, KernelKind kind) {
    GpuKernelTally t(g, GpuPrecision::kFp32, GpuLaunch::kEager);
    t.Add(flops, bytes, 1, kind, GemmShape{8, 8, 8});
    return t.Finish().time_s;
  };
  EXPECT_DOUBLE_EQ(batch_s(1024 * one, 1e3, KernelKind::kBatchedGemm), 1024 * one / 4e9);
  EXPECT_DOUBLE_EQ(batch_s(one, 1e3, KernelKind::kGemm), one / 1e8);  // one alone
  EXPECT_DOUBLE_EQ(batch_s(1024 * one, 1e9, KernelKind::kBatchedGemm), 1e9 / 1e10);
}

// With a measured batched grid, a batch's work goes at the rate a full
// batch of its products' shape reached, whatever the bytes; a batch too
// small to fill the device still takes one product's own time (one wave).
TEST(GpuKernelCostTest, ABatchTakesTheBatchedGridsRateAndAtLeastOneProductsTime) {
  GpuSpec g = TableProfile();
  g.gemm_grid = *GemmGrid::Make({8, 8192}, {8}, {8}, {1e8, 4e9});
  g.gemm_grid_batched = *GemmGrid::Make({8, 64}, {8}, {8}, {2e9, 3e9});
  const double one = 2.0 * 8 * 8 * 8;
  auto batch_s = [&](double flops, double bytes, const GemmShape& shape) {
    GpuKernelTally t(g, GpuPrecision::kFp32, GpuLaunch::kEager);
    t.Add(flops, bytes, 1, KernelKind::kBatchedGemm, shape);
    return t.Finish().time_s;
  };
  EXPECT_DOUBLE_EQ(batch_s(1024 * one, 1e3, GemmShape{8, 8, 8}), 1024 * one / 2e9);
  EXPECT_DOUBLE_EQ(batch_s(1024 * one, 1e9, GemmShape{8, 8, 8}), 1024 * one / 2e9);
  // Four products: less than one product alone takes at its plain rate.
  EXPECT_DOUBLE_EQ(batch_s(4 * one, 1e3, GemmShape{8, 8, 8}), one / 1e8);
  // One product's rows between the grid's: log-interpolated (and held at
  // the plain grid's edge for the one product).
  const double each = 2.0 * 16 * 8 * 8;
  EXPECT_NEAR(batch_s(1e5 * each, 1e3, GemmShape{16, 8, 8}),
              1e5 * each / (2e9 * std::pow(1.5, 1.0 / 3)), 1e-12);
}

// Without a batched grid, an fp32 batch does the work of its tiles: each
// product's output padded to whole tiles, and the tiles in whole waves
// over the SMs, each SM holding 32,768 results (kernel_cost.cc).
TEST(GpuKernelCostTest, ABatchWithoutAGridDoesItsPaddedTilesInWholeWaves) {
  GpuSpec g = *ParseGpuProfile("name = t; fp32_flops = 1e12; memory_bw = 1e15; synchronous = true");
  g.compute_share = g.memory_share = 1;
  g.dispatch_s = 0;
  g.batched_tiles = {{128, 128}};
  auto batch_s = [&](double products, const GemmShape& one, GpuPrecision p = GpuPrecision::kFp32) {
    GpuKernelTally t(g, p, GpuLaunch::kEager);
    t.Add(products * 2.0 * double(one.m * one.k * one.n), 1e3, 1, KernelKind::kBatchedGemm, one);
    return t.Finish().time_s;
  };
  const double tile_flops = 2.0 * 128 * 128 * 64;
  // 1,000 products of 100 x 64 x 100: each a 128 x 128 tile, as a 128 x 64
  // x 128 product does; one of 200 x 64 x 100 takes two.
  EXPECT_DOUBLE_EQ(batch_s(1000, GemmShape{100, 100, 64}), 1000 * tile_flops / 1e12);
  EXPECT_DOUBLE_EQ(batch_s(1000, GemmShape{128, 128, 64}), 1000 * tile_flops / 1e12);
  EXPECT_DOUBLE_EQ(batch_s(1000, GemmShape{200, 100, 64}), 2000 * tile_flops / 1e12);
  // Other precisions run other kernels: their bare work.
  EXPECT_DOUBLE_EQ(batch_s(1000, GemmShape{100, 100, 64}, GpuPrecision::kBf16),
                   1000 * 2.0 * 100 * 100 * 64 / 1e12);
  // 10 SMs of two 128 x 128 blocks each: 21 tiles run as 40, 20 as 20.
  g.sm_count = 10;
  EXPECT_DOUBLE_EQ(batch_s(21, GemmShape{128, 128, 64}), 40 * tile_flops / 1e12);
  EXPECT_DOUBLE_EQ(batch_s(20, GemmShape{128, 128, 64}), 20 * tile_flops / 1e12);
  // Of several tiles, the least work: a 32 x 128 output fills a 32 x 128
  // tile (eight to an SM) where a 64 x 64 pair would double it.
  g.batched_tiles = {{64, 64}, {32, 128}};
  g.sm_count = 0;
  EXPECT_DOUBLE_EQ(batch_s(1000, GemmShape{32, 128, 64}), 1000 * 2.0 * 32 * 128 * 64 / 1e12);
  EXPECT_DOUBLE_EQ(batch_s(1000, GemmShape{64, 64, 64}), 1000 * 2.0 * 64 * 64 * 64 / 1e12);
  // A measured batched grid prices the batch instead.
  g.gemm_grid_batched = *GemmGrid::Make({100}, {64}, {100}, {5e11});
  EXPECT_DOUBLE_EQ(batch_s(1000, GemmShape{100, 100, 64}), 1000 * 2.0 * 100 * 100 * 64 / 5e11);
}

// ATen's forward (LibTorch 2.11) reads a row once in a warp (to 2,048
// elements), in a block's registers (to 9,216) or in its 48 KiB of shared
// memory in 16-byte vectors; any other row three times: twice the bytes
// recorded, or twice a measured grid's time.
TEST(GpuKernelCostTest, AWideSoftmaxRowIsReadThreeTimes) {
  GpuSpec g = *ParseGpuProfile("name = t; fp32_flops = 1e12; memory_bw = 1e10; synchronous = true");
  g.compute_share = g.memory_share = 1;
  g.dispatch_s = 0;
  auto seconds = [&](int64_t rows, int64_t width, double element = 4) {
    GpuKernel k{"aten::_softmax", 0, 2 * element * double(rows * width)};
    k.shape = GemmShape{rows, width, 1};
    return CostKernels(g, GpuPrecision::kFp32, {k}).time_s;
  };
  auto bytes_s = [](double bytes) { return bytes / 1e10; };
  EXPECT_DOUBLE_EQ(seconds(1000, 2048), bytes_s(8.0 * 1000 * 2048));      // a warp a row
  EXPECT_DOUBLE_EQ(seconds(100, 4098), bytes_s(8.0 * 100 * 4098));        // in registers
  EXPECT_DOUBLE_EQ(seconds(100, 9216), bytes_s(8.0 * 100 * 9216));        // nine a thread
  EXPECT_DOUBLE_EQ(seconds(100, 12000), bytes_s(8.0 * 100 * 12000));      // in shared memory
  EXPECT_DOUBLE_EQ(seconds(100, 12288), 2 * bytes_s(8.0 * 100 * 12288));  // past 48 KiB
  EXPECT_DOUBLE_EQ(seconds(100, 9218), 2 * bytes_s(8.0 * 100 * 9218));    // no 16-byte vectors
  // Two-byte elements: twice the row fits, in vectors of eight; a warp's
  // row is still at most 2,048 elements.
  EXPECT_DOUBLE_EQ(seconds(100, 16384, 2), bytes_s(4.0 * 100 * 16384));
  EXPECT_DOUBLE_EQ(seconds(100, 16388, 2), 2 * bytes_s(4.0 * 100 * 16388));
  EXPECT_TRUE(SoftmaxReadsRowOnce(2048, 2));
  EXPECT_TRUE(SoftmaxReadsRowOnce(2049, 4));  // registers
  // The backward's own bytes, whatever the width.
  GpuKernel back{"aten::_softmax_backward_data", 0, 12.0 * 100 * 16384};
  back.shape = GemmShape{100, 16384, 1};
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {back}).time_s, bytes_s(back.bytes));
  // A measured grid's rows are read once: a row read three times takes
  // twice the grid's time.
  g.softmax_grid = *GemmGrid::Make({100}, {1}, {1024}, {1e9});
  EXPECT_DOUBLE_EQ(seconds(100, 12288), 2 * 100 * 12288 / 1e9);
  EXPECT_DOUBLE_EQ(seconds(100, 12000), 100 * 12000 / 1e9);
}

// A softmax with a measured grid costs its elements at the grid's rate,
// forward and backward; without one, its bytes at the element-wise
// bandwidth, as before.
TEST(GpuKernelCostTest, ASoftmaxTakesItsGridsRate) {
  GpuSpec g = TableProfile();
  GpuKernel forward{"aten::_softmax", 0, 1e3};
  forward.shape = GemmShape{1024, 64, 1};
  GpuKernel backward = forward;
  backward.op = "aten::_softmax_backward_data";
  EXPECT_EQ(KernelKindOf(forward.op), KernelKind::kSoftmax);
  EXPECT_EQ(KernelKindOf(backward.op), KernelKind::kSoftmaxBackward);
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {forward}).time_s, 1e3 / 1e10);
  g.softmax_grid = *GemmGrid::Make({1024}, {1}, {64}, {5e8});
  g.softmax_backward_grid = *GemmGrid::Make({1024}, {1}, {64}, {2.5e8});
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kFp32, {forward}).time_s, 1024 * 64 / 5e8);
  EXPECT_DOUBLE_EQ(CostKernels(g, GpuPrecision::kBf16, {backward}).time_s, 1024 * 64 / 2.5e8);
}

TEST(GpuKernelCostTest, AGraphPaysNodesAndOneLaunch) {
  const GpuSpec h100 = *GpuPreset("h100");
  std::vector<GpuKernel> tiny(1000, GpuKernel{"aten::add", 10, 120});
  const GpuStepCost graph = CostKernels(h100, GpuPrecision::kFp32, tiny, GpuLaunch::kGraph);
  EXPECT_NEAR(graph.time_s, h100.dispatch_s + 1000 * (h100.min_kernel_s + h100.graph_node_s),
              1e-12);
  const GpuStepCost python = CostKernels(h100, GpuPrecision::kFp32, tiny, GpuLaunch::kPythonEager);
  EXPECT_NEAR(python.time_s, 1000 * (h100.dispatch_s + h100.python_op_s), 1e-12);
  // A view the program calls from Python pays Python's layer as well; from
  // C++ its host time alone; in a graph nothing beyond the one launch.
  const std::vector<GpuKernel> views(500, GpuKernel{"aten::view"});
  EXPECT_NEAR(CostKernels(h100, GpuPrecision::kFp32, views, GpuLaunch::kPythonEager).time_s,
              500 * (h100.host_op_s + h100.python_op_s), 1e-12);
  EXPECT_NEAR(CostKernels(h100, GpuPrecision::kFp32, views, GpuLaunch::kEager).time_s,
              500 * h100.host_op_s, 1e-12);
  EXPECT_DOUBLE_EQ(CostKernels(h100, GpuPrecision::kFp32, views, GpuLaunch::kGraph).time_s,
                   h100.dispatch_s);
  // Views launch no kernel: the whole eager step waits on the host, and
  // all of it counts as launch-bound.
  const GpuStepCost host_bound = CostKernels(h100, GpuPrecision::kFp32, views, GpuLaunch::kEager);
  EXPECT_EQ(host_bound.launch_bound_kernels, 0);
  EXPECT_DOUBLE_EQ(host_bound.launch_bound_s, host_bound.time_s);
  EXPECT_DOUBLE_EQ(host_bound.launch_bound_share(), 1.0);
}

TEST(GpuKernelCostTest, ASynchronousDeviceAddsDispatchToWork) {
  GpuSpec cpu = *ParseGpuProfile(
      "name = cpu; fp32_flops = 1e11; memory_bw = 1e10; compute_share = 1; memory_share = 1;"
      "dispatch_s = 4e-6; synchronous = true; gemm_rates = 1e6:1e9,1e9:1e11");
  const std::vector<GpuKernel> k = {{"aten::mm", 1e6, 0}, {"aten::mm", 1e9, 0},
                                    {"aten::relu", 1e3, 1e5}};
  const GpuStepCost c = CostKernels(cpu, GpuPrecision::kFp32, k);
  EXPECT_NEAR(c.time_s, 3 * 4e-6 + 1e6 / 1e9 + 1e9 / 1e11 + 1e5 / 1e10, 1e-12);
  // Between measured sizes the rate is interpolated in log-log.
  EXPECT_NEAR(GemmRate(cpu, GpuPrecision::kFp32, std::sqrt(1e6 * 1e9)), 1e10, 1e-3);
  EXPECT_NEAR(GemmRate(cpu, GpuPrecision::kFp32, 1e12), 1e11, 1e-3);
}

// A call timed by events on an idle GPU: Python's layer once, the views
// before the first launch and that launch's dispatch, then the kernels'
// device time; a host slower than the kernels bounds it instead.
TEST(GpuKernelCostTest, AnIdleCallWaitsForItsFirstLaunch) {
  GpuSpec g = *ParseGpuProfile(
      "name = g; fp32_flops = 1e12; memory_bw = 1e11; compute_share = 1; memory_share = 1;"
      "dispatch_s = 10e-6; python_op_s = 5e-6; min_kernel_s = 1e-6; graph_node_s = 0.5e-6");
  g.host_op_s = 2e-6;
  // A view, then a 1e7-byte copy (100 us) and a 1e6-byte one (10 us).
  const std::vector<GpuKernel> call = {
      {"aten::t"}, {"aten::copy_", 0, 1e7}, {"aten::copy_", 0, 1e6}};
  EXPECT_NEAR(IdleCallSeconds(g, GpuPrecision::kFp32, call), 5e-6 + 2e-6 + 10e-6 + 110e-6, 1e-12);
  // Ten tiny kernels: the host's 5 + 10 x 10 us outlast 10 us of device work.
  const std::vector<GpuKernel> tiny(10, GpuKernel{"aten::add", 10, 120});
  EXPECT_NEAR(IdleCallSeconds(g, GpuPrecision::kFp32, tiny), 105e-6, 1e-12);
  // One tiny kernel: its host's 15 us, then its shortest kernel's 1 us.
  EXPECT_NEAR(IdleCallSeconds(g, GpuPrecision::kFp32, {tiny[0]}), 16e-6, 1e-12);
}

// An op that writes in place takes the in-place bandwidths where they are
// measured; a product stored transposed takes its layout's grid.
TEST(GpuKernelCostTest, InPlaceOpsAndTransposedOperandsTakeTheirOwnRates) {
  GpuSpec cpu = *ParseGpuProfile(
      "name = cpu; fp32_flops = 1e11; memory_bw = 1e10; compute_share = 1; memory_share = 1;"
      "synchronous = true; memory_rates = 1:1e10; memory_rates_inplace = 1:4e10;"
      "gemm_grid = 8x8x8:2e9; gemm_grid_nt = 8x8x8:1e9; gemm_grid_tn = 8x8x8:5e8");
  EXPECT_NEAR(CostKernels(cpu, GpuPrecision::kFp32, {{"aten::mul", 1e3, 1e6}}).time_s,
              1e6 / 1e10, 1e-15);
  EXPECT_NEAR(CostKernels(cpu, GpuPrecision::kFp32, {{"aten::mul_", 1e3, 1e6}}).time_s,
              1e6 / 4e10, 1e-15);
  GemmShape nt{8, 8, 8}, tn{8, 8, 8};
  nt.b_transposed = true;
  tn.a_transposed = true;
  EXPECT_EQ(GemmRate(cpu, GpuPrecision::kFp32, 1024, 0, GemmShape{8, 8, 8}), 2e9);
  EXPECT_EQ(GemmRate(cpu, GpuPrecision::kFp32, 1024, 0, nt), 1e9);
  EXPECT_EQ(GemmRate(cpu, GpuPrecision::kFp32, 1024, 0, tn), 5e8);
  GpuSpec plain = cpu;
  plain.gemm_grid_nt = GemmGrid();
  EXPECT_EQ(GemmRate(plain, GpuPrecision::kFp32, 1024, 0, nt), 2e9);  // none measured
}

// A measured product rate holds the product's own traffic, whichever table
// measured it; a product rated at peak pays its bytes as well.
TEST(GpuKernelCostTest, AMeasuredProductRateHoldsItsTraffic) {
  GpuSpec cpu = *ParseGpuProfile(
      "name = cpu; fp32_flops = 1e11; memory_bw = 1e10; compute_share = 1; memory_share = 1;"
      "synchronous = true; gemm_grid_streamed = 8x8x8:2e9");
  const GpuKernel mm{"aten::mm", 1e6, 1e8, GemmShape{8, 8, 8}};
  GpuKernelTally streamed(cpu, GpuPrecision::kFp32, GpuLaunch::kEager, {true, false});
  streamed.Add(mm.flops, mm.bytes, 1, KernelKind::kGemm, mm.shape);
  EXPECT_NEAR(streamed.Finish().time_s, 1e6 / 2e9, 1e-15);
  // Not streamed: no grid of its own, so peak, and its bytes take longer.
  GpuKernelTally cached(cpu, GpuPrecision::kFp32, GpuLaunch::kEager);
  cached.Add(mm.flops, mm.bytes, 1, KernelKind::kGemm, mm.shape);
  EXPECT_NEAR(cached.Finish().time_s, 1e8 / 1e10, 1e-15);
  // A product with no FLOPs recorded is not rated by the size table.
  cpu.gemm_rates = {{1e3, 1e9}};
  GpuKernelTally empty(cpu, GpuPrecision::kFp32, GpuLaunch::kEager);
  empty.Add(0, 1e8, 1, KernelKind::kGemm, GemmShape());
  EXPECT_NEAR(empty.Finish().time_s, 1e8 / 1e10, 1e-15);
}

// Frames beside a kernel, autograd's recording and the backward engine's
// nodes cost host time; a graph replays kernels only.
TEST(GpuKernelCostTest, FramesAndHistoryAreHostTime) {
  GpuSpec cpu = *ParseGpuProfile(
      "name = cpu; fp32_flops = 1e11; memory_bw = 1e10; compute_share = 1; memory_share = 1;"
      "dispatch_s = 1e-6; frame_s = 2e-7; history_s = 5e-7; node_s = 3e-6; synchronous = true");
  GpuKernel relu{"aten::relu", 1e3, 1e5};
  relu.frames = 3;
  relu.history = 2;
  relu.nodes = 2;
  GpuKernel view{"aten::view", 0, 0};
  view.history = 1;
  const GpuStepCost c = CostKernels(cpu, GpuPrecision::kFp32, {relu, view});
  EXPECT_NEAR(c.time_s, 2 * 1e-6 + 1e5 / 1e10 + 3 * 2e-7 + 3 * 5e-7 + 2 * 3e-6, 1e-15);
  EXPECT_NEAR(CostKernels(cpu, GpuPrecision::kFp32, {relu, view}, GpuLaunch::kGraph).time_s,
              1e5 / 1e10 + 1e-6, 1e-15);
  // A measured kernel-less op costs its own figure, not a launch's.
  GpuSpec measured = cpu;
  measured.host_op_s = 2.5e-7;
  EXPECT_NEAR(CostKernels(measured, GpuPrecision::kFp32, {relu, view}).time_s,
              c.time_s - 1e-6 + 2.5e-7, 1e-15);
}

// A product's rate is keyed by the square product of its intensity: a
// square one by its own FLOPs, a skinny one or a batch of small ones by
// the small square product it resembles.
TEST(GpuKernelCostTest, ProductsAreSizedByTheirIntensity) {
  const auto square = [](double n) { return std::make_pair(2 * n * n * n, 4 * 3 * n * n); };
  const auto [sq_flops, sq_bytes] = square(512);
  EXPECT_NEAR(GemmSize(sq_flops, sq_bytes), sq_flops, 1e-6 * sq_flops);
  // 8 independent 64-products (a bmm): each 64-product's size, not 8 times it.
  const auto [small_flops, small_bytes] = square(64);
  EXPECT_NEAR(GemmSize(8 * small_flops, 8 * small_bytes), small_flops, 1e-6 * small_flops);
  // 16 rows by 512 x 512: the intensity of a ~46-square, far below its FLOPs.
  const double skinny_flops = 2.0 * 16 * 512 * 512, skinny_bytes = 4.0 * (2 * 16 * 512 + 512 * 512);
  const double n = 1.5 * skinny_flops / (skinny_bytes / 4);
  EXPECT_NEAR(GemmSize(skinny_flops, skinny_bytes), 2 * n * n * n, 1e-6);
  EXPECT_LT(GemmSize(skinny_flops, skinny_bytes), skinny_flops / 20);
  EXPECT_EQ(GemmSize(1e6, 0), 1e6);  // no traffic recorded: its FLOPs
  GpuSpec cpu =
      *ParseGpuProfile("name = cpu; fp32_flops = 1e11; memory_bw = 1e10; gemm_rates = 1e5:1e9,1e9:1e11");
  EXPECT_LT(GemmRate(cpu, GpuPrecision::kFp32, skinny_flops, skinny_bytes),
            GemmRate(cpu, GpuPrecision::kFp32, skinny_flops));
}

TEST(GpuKernelCostTest, ViewsLaunchNothing) {
  EXPECT_TRUE(LaunchesNoKernel("aten::transpose"));
  EXPECT_TRUE(LaunchesNoKernel("aten::view"));
  EXPECT_FALSE(LaunchesNoKernel("aten::addmm"));
  EXPECT_FALSE(LaunchesNoKernel("aten::copy_"));
  EXPECT_EQ(KernelKindOf("aten::addmm"), KernelKind::kGemm);
  EXPECT_EQ(KernelKindOf("aten::bmm"), KernelKind::kBatchedGemm);
  EXPECT_EQ(KernelKindOf("aten::baddbmm"), KernelKind::kBatchedGemm);
  EXPECT_EQ(KernelKindOf("aten::add"), KernelKind::kElementwise);
  EXPECT_EQ(KernelKindOf("aten::add_"), KernelKind::kElementwiseInPlace);
  EXPECT_EQ(KernelKindOf("aten::_scaled_dot_product_flash_attention_for_cpu"),
            KernelKind::kAttention);
  EXPECT_EQ(KernelKindOf("aten::_scaled_dot_product_flash_attention_backward"),
            KernelKind::kAttentionBackward);
}

}  // namespace
}  // namespace hpt
