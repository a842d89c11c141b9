#include "devices/gpu/roofline.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/test_util.h"
#include "gtest/gtest.h"

namespace hpt {

// devices/gpu/profiles/h200.profile's text (//devices:h200_profile_cc).
extern const char kH200Profile[];

namespace {

TEST(RooflineTest, ComputeBoundGemmOnV100) {
  GpuSpec v100 = *GpuPreset("v100");
  // 1 TFLOP with 1 GB of traffic: 1e12 / 15.7e12 s vs 1e9 / 9e11 s.
  GpuCost c = RooflineCost(v100, GpuPrecision::kFp32, 1e12, 1e9);
  EXPECT_TRUE(c.compute_bound);
  EXPECT_NEAR(c.time_s, 1e12 / 15.7e12 / 0.7, 1e-12);
  EXPECT_NEAR(c.energy_j, c.time_s * 300, 1e-9);
}

TEST(RooflineTest, MemoryBoundKernelAndTensorCores) {
  GpuSpec h100 = *GpuPreset("h100");
  GpuCost c = RooflineCost(h100, GpuPrecision::kBf16, 1e9, 1e10);
  EXPECT_FALSE(c.compute_bound);
  EXPECT_NEAR(c.time_s, 1e10 / 3.35e12 / 0.7, 1e-12);
  GpuSpec a100 = *GpuPreset("a100");
  EXPECT_LT(RooflineCost(a100, GpuPrecision::kTf32, 1e12, 0).time_s,
            RooflineCost(a100, GpuPrecision::kFp32, 1e12, 0).time_s / 7);
  EXPECT_FALSE(GpuPreset("p100").ok());
}

// The presets against the vendors' published figures, restated here from
// the documents (not from roofline.cc):
//   V100 SXM2: NVIDIA Tesla V100 datasheet (2020): FP32 15.7 TFLOPS, Tensor
//     Performance 125 TFLOPS, HBM2 900 GB/s, max power 300 W.
//   A100 SXM4 40GB: NVIDIA A100 datasheet (2021): FP32 19.5 TFLOPS, TF32
//     Tensor Core 156 TFLOPS (312 with sparsity), BF16 312 TFLOPS (624),
//     1,555 GB/s, 400 W.
//   H100 SXM5: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022),
//     Table 1: FP32 66.9 TFLOPS at boost (the datasheet rounds to 67), TF32
//     494.7 / 989.4 (sparse), BF16 989.4 / 1,978.9 (sparse); datasheet:
//     3.35 TB/s HBM3, up to 700 W.
//   V100 PCIe: NVIDIA V100 datasheet (2020): FP32 14 TFLOPS, Tensor 112
//     TFLOPS, 900 GB/s, 250 W.
//   A100 40GB PCIe: NVIDIA product brief PB-10137-001 (2020): the SXM4's
//     peaks, 1,555 GB/s, 250 W.
//   A100 80GB PCIe: NVIDIA A100 datasheet (2021): the same peaks, 1,935
//     GB/s, 300 W.
//   T4: NVIDIA T4 datasheet: FP32 8.1 TFLOPS, mixed precision (FP16) 65
//     TFLOPS, GDDR6 320 GB/s, 70 W; 40 SMs.
TEST(RooflineTest, PresetsMatchTheirPublishedSpecifications) {
  struct Published {
    const char* name;
    double fp32_tflops, tf32_tflops, tensor16_tflops, bw_gb_s, watts, sms;
  };
  const Published kPublished[] = {{"v100", 15.7, 0, 125, 900, 300, 80},
                                  {"a100", 19.5, 156, 312, 1555, 400, 108},
                                  {"h100", 67, 494.7, 989.4, 3350, 700, 132},
                                  {"v100-pcie", 14, 0, 112, 900, 250, 80},
                                  {"a100-pcie", 19.5, 156, 312, 1555, 250, 108},
                                  {"a100-pcie-80gb", 19.5, 156, 312, 1935, 300, 108},
                                  {"t4", 8.1, 0, 65, 320, 70, 40}};
  for (const Published& p : kPublished) {
    absl::StatusOr<GpuSpec> g = GpuPreset(p.name);
    ASSERT_TRUE(g.ok()) << p.name;
    EXPECT_NEAR(g->fp32_flops / 1e12, p.fp32_tflops, 0.1) << p.name;
    EXPECT_NEAR(g->tf32_flops / 1e12, p.tf32_tflops, 0.1) << p.name;
    EXPECT_NEAR(g->bf16_flops / 1e12, p.tensor16_tflops, 0.1) << p.name;
    EXPECT_NEAR(g->memory_bw / 1e9, p.bw_gb_s, 0.5) << p.name;
    EXPECT_EQ(g->load_power_w, p.watts) << p.name;
    EXPECT_EQ(g->sm_count, p.sms) << p.name;
    EXPECT_LT(g->idle_power_w, g->load_power_w / 4) << p.name;
    // A stepping board holds a CUDA context: 36 W over idle (Vadari 2026).
    EXPECT_DOUBLE_EQ(g->active_power_w, g->idle_power_w + 36) << p.name;
  }
  // The boards in NeuSight's train split take their own achieved shares
  // from it; every other preset the V100's Empirical Roofline Toolkit
  // shares.
  const std::map<std::string, std::pair<double, double>> kOwnShares = {
      {"v100-pcie", {0.957, 0.909}}, {"a100-pcie", {0.866, 0.852}}, {"t4", {0.45, 0.76}}};
  for (const std::string& name : GpuPresetNames()) {
    const GpuSpec g = *GpuPreset(name);
    const auto own = kOwnShares.find(name);
    const auto [compute, memory] =
        own == kOwnShares.end() ? std::pair<double, double>{0.906, 0.92} : own->second;
    EXPECT_DOUBLE_EQ(g.compute_share, compute) << name;
    EXPECT_DOUBLE_EQ(g.memory_share, memory) << name;
  }
  EXPECT_EQ(GpuPresetNames(), (std::vector<std::string>{"v100", "a100", "h100", "v100-pcie",
                                                        "a100-pcie", "a100-pcie-80gb", "t4"}));
}

// The h100 preset's kernels are the H200's measured device times
// (devices/gpu/profiles/h200.profile, the same GH100 processor), its
// bandwidth tables capped at the H100's own; the other presets keep the
// datasheets' peaks.
TEST(RooflineTest, TheH100PresetTakesHoppersMeasuredKernels) {
  const GpuSpec h100 = *GpuPreset("h100");
  EXPECT_FALSE(h100.gemm_grid.empty());
  EXPECT_FALSE(h100.gemm_grid_nt.empty());
  EXPECT_FALSE(h100.norm_grid.empty());
  EXPECT_FALSE(h100.attention_grid.empty());
  EXPECT_FALSE(h100.gemm_grid_batched.empty());
  EXPECT_FALSE(h100.softmax_backward_grid.empty());
  // The shortest kernel as a graph replays it, 1.11 us on the H200; the
  // tables hold each node's cost, so a node adds nothing more.
  EXPECT_NEAR(h100.min_kernel_s, 1.11e-6, 0.01e-6);
  EXPECT_EQ(h100.graph_node_s, 0);
  EXPECT_DOUBLE_EQ(h100.cache_bytes, 50e6);
  const double cap = 3.35e12 * 0.92;
  ASSERT_FALSE(h100.memory_rates_inplace.empty());
  for (const auto& [bytes, rate] : h100.memory_rates_inplace) EXPECT_LE(rate, cap) << bytes;
  // The H200 moved 4.1 TB/s in place at 537 MB: over the H100's, so capped.
  EXPECT_DOUBLE_EQ(h100.memory_rates_inplace.back().second, cap);
  // A 57 x 1536 x 512 product (the wind preset's q, k, v projection) at
  // its measured 8.3 TFLOP/s, an eighth of the datasheet's 67.
  EXPECT_NEAR(h100.gemm_grid.Rate({57, 1536, 512}) / 1e12, 8.31, 0.05);
  for (const std::string& name : GpuPresetNames()) {
    if (name == "h100") continue;
    const GpuSpec g = *GpuPreset(name);
    EXPECT_TRUE(g.gemm_grid.empty()) << name;
    EXPECT_FALSE(g.batched_tiles.empty()) << name;
    EXPECT_TRUE(g.gemm_grid_batched.empty()) << name;
    EXPECT_TRUE(g.softmax_grid.empty()) << name;
    EXPECT_DOUBLE_EQ(g.min_kernel_s, 1e-6) << name;
    EXPECT_DOUBLE_EQ(g.graph_node_s, 0.5e-6) << name;
  }
}

// The calibrated H200 profile the h100 preset reads is a profile file a
// user can name too (reference_gpu=devices/gpu/profiles/h200.profile).
TEST(RooflineTest, TheCalibratedH200ProfileParses) {
  const absl::StatusOr<GpuSpec> h200 = GpuProfileOrPreset(kH200Profile);
  ASSERT_TRUE(h200.ok()) << h200.status();
  EXPECT_EQ(h200->name, "NVIDIA H200");
  EXPECT_NEAR(h200->load_power_w, 693, 1);
  EXPECT_NEAR(h200->fp32_flops / 1e12, 51.6, 0.1);
  EXPECT_NEAR(h200->bf16_flops / 1e12, 777, 1);
}

// No kernel outruns its device: a profile whose product or attention rate
// is past its fp32 peak is refused, naming the table's line, as the H200
// profile of 2026-11-27 was before its repair (an attention rate of
// 2.9e16 FLOP/s, a time divided by a 1e-9 s floor). Tables of sizes list
// them in order, and every rate is a number above zero.
TEST(RooflineTest, ARatePastTheDevicesPeakOrOutOfOrderIsRefused) {
  std::string text = kH200Profile;
  const size_t at = text.find("\nattention_grid = 16x8x16:") + 1;
  ASSERT_NE(at, 0u);
  const size_t rate = text.find(':', at) + 1;
  text.replace(rate, text.find(',', rate) - rate, "2.9e16");
  const int line = int(std::count(text.begin(), text.begin() + at, '\n')) + 1;
  const absl::Status s = ParseGpuProfile(text).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().substr(0, s.message().find(": no kernel")),
            absl::StrCat("gpu profile entry ", line,
                         " (attention_grid): 1 of its 125 rates are "
                         "above the profile's fp32 peak of 5.16371e+13 FLOP/s (fp32_flops), the "
                         "first 2.9e+16 at 16x8x16"))
      << s;
  EXPECT_NE(s.message().find("Re-run hpt_calibrate"), std::string::npos) << s;
  // Where the device has faster units for fp32 products (TF32), they are its peak.
  const std::string base = "name = x; fp32_flops = 1e12; memory_bw = 1e11; ";
  EXPECT_FALSE(ParseGpuProfile(base + "gemm_rates = 1e6:2e12").ok());
  EXPECT_TRUE(ParseGpuProfile(base + "tf32_flops = 4e12; gemm_rates = 1e6:2e12").ok());
  EXPECT_FALSE(ParseGpuProfile(base + "gemm_grid = 8x8x8:3e12").ok());
  // Sizes in order; rates above zero.
  absl::Status order = ParseGpuProfile(base + "memory_rates = 2e9:4e10,2e6:3e10").status();
  EXPECT_NE(order.message().find("entry 4 (memory_rates): sizes must ascend, and 2e+06 follows "
                                 "2e+09: list the pairs by size"),
            std::string::npos)
      << order;
  EXPECT_FALSE(ParseGpuProfile(base + "memory_rates = 2e6:0").ok());
  EXPECT_FALSE(ParseGpuProfile(base + "gemm_grid = 8x8x8:0").ok());
}

// A preset prices a kernel-less op at its dispatch_s, the rule its table
// was checked under (roofline.cc); so does a profile written before
// host_op_s, which has none.
TEST(RooflineTest, AKernelLessOpCostsADispatchWhereNothingMeasuredIt) {
  for (const std::string& name : GpuPresetNames()) {
    EXPECT_EQ(GpuPreset(name)->host_op_s, GpuPreset(name)->dispatch_s) << name;
  }
  absl::StatusOr<GpuSpec> old = ParseGpuProfile(
      "name = old; fp32_flops = 1e11; memory_bw = 1e10; dispatch_s = 1.2e-6; frame_s = 3e-7");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->host_op_s, 1.2e-6);
  absl::StatusOr<GpuSpec> measured = ParseGpuProfile(
      "name = new; fp32_flops = 1e11; memory_bw = 1e10; host_op_s = 2.5e-7; dispatch_s = 1.2e-6");
  ASSERT_TRUE(measured.ok()) << measured.status();
  EXPECT_EQ(measured->host_op_s, 2.5e-7);
  EXPECT_FALSE(ParseGpuProfile("name = x; fp32_flops = 1; memory_bw = 1; host_op_s = -1").ok());
}

TEST(RooflineTest, AProfileRoundTripsAndBadEntriesNameTheirLine) {
  GpuSpec h100 = *GpuPreset("a100");
  h100.gemm_rates = {{2e6, 3e11}, {2e9, 4e13}};
  h100.gemm_grid = *GemmGrid::Make({8, 64}, {8}, {8, 512}, {1e9, 2e9, 3e9, 4e9});
  h100.memory_rates_streamed = {{1e6, 5e11}};
  h100.cache_bytes = 50e6;
  h100.host_op_s = 2.5e-7;
  h100.frame_s = 3e-7;
  h100.history_s = 6e-7;
  h100.node_s = 2e-6;
  h100.memory_rates_inplace = {{1e6, 7e11}};
  h100.gemm_grid_tn = *GemmGrid::Make({8}, {8}, {8}, {5e9});
  h100.gemm_grid_streamed_result = *GemmGrid::Make({8}, {8}, {8}, {6e9});
  h100.norm_backward_grid = *GemmGrid::Make({16, 256}, {1}, {32}, {1e9, 3e9});
  h100.batched_tiles = {{64, 64}, {32, 128}};
  absl::StatusOr<GpuSpec> back = ParseGpuProfile(GpuProfileText(h100));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "a100");
  EXPECT_EQ(back->dispatch_s, h100.dispatch_s);
  EXPECT_EQ(back->host_op_s, 2.5e-7);
  EXPECT_EQ(back->frame_s, 3e-7);
  EXPECT_EQ(back->history_s, 6e-7);
  EXPECT_EQ(back->node_s, 2e-6);
  EXPECT_EQ(back->memory_rates_inplace, h100.memory_rates_inplace);
  EXPECT_EQ(back->gemm_grid_tn.Rate({8, 8, 8}), 5e9);
  EXPECT_TRUE(back->gemm_grid_nt.empty());
  EXPECT_TRUE(back->norm_grid.empty());
  EXPECT_EQ(back->norm_backward_grid.Rate({256, 32, 1}), 3e9);  // rows, width
  EXPECT_EQ(back->gemm_rates, h100.gemm_rates);
  EXPECT_EQ(back->gemm_grid.Rate({64, 512, 8}), 4e9);  // m, n, k
  EXPECT_TRUE(back->gemm_grid_streamed.empty());
  EXPECT_EQ(back->gemm_grid_streamed_result.Rate({8, 8, 8}), 6e9);
  EXPECT_EQ(back->memory_rates_streamed, h100.memory_rates_streamed);
  EXPECT_EQ(back->cache_bytes, 50e6);
  EXPECT_EQ(back->load_power_w, 400);
  EXPECT_EQ(back->batched_tiles, h100.batched_tiles);
  EXPECT_EQ(back->sm_count, 108);
  absl::Status s =
      ParseGpuProfile("name = x\nfp32_flops = 1\nmemory_bw = 1\nbatched_tiles = 128x128,64x0")
          .status();
  EXPECT_NE(s.message().find("entry 4 (batched_tiles): want tiles as ROWSxCOLUMNS"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("got '64x0'"), std::string::npos) << s;
  s = ParseGpuProfile("name = x\nfp32_flops = 1e12\nwarp_speed = 9").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("entry 3 (warp_speed)"), std::string::npos) << s;
  EXPECT_FALSE(ParseGpuProfile("name = x; memory_bw = 1e9").ok());  // no fp32_flops
  s = ParseGpuProfile("name = x\nfp32_flops = 1\nmemory_bw = 1\ngemm_grid = 8x8x8:1,8x8:2")
          .status();
  EXPECT_NE(s.message().find("entry 4 (gemm_grid): gemm grid entry 2 ('8x8:2')"),
            std::string::npos)
      << s;
  EXPECT_TRUE(GpuProfileOrPreset("name = x; fp32_flops = 1; memory_bw = 1").ok());
  EXPECT_FALSE(GpuProfileOrPreset("h200").ok());
}

// A profile file is read where it is named (hptctl, a worker's flag): it
// travels on as one line of text; what is wrong with it names the file and
// the line and never quotes the file, whatever file it is.
class ProfileFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    return testing::WriteTestFile(dir_, name, bytes);
  }
  std::string Error(const std::string& value) {
    absl::StatusOr<std::string> v = ReferenceGpuValue(value);
    EXPECT_FALSE(v.ok()) << value;
    return v.ok() ? "" : std::string(v.status().message());
  }
  const std::string dir_ = testing::MakeTempDir("roofline_test");
};

TEST_F(ProfileFileTest, AFileTravelsAsOneLineOfItsText) {
  const std::string path = Write("mine.profile",
                                 "# calibrated; by hand\nname = mine  # a note; key = 1\n"
                                 "fp32_flops = 2e12\nmemory_bw = 1e11\n");
  absl::StatusOr<std::string> v = ReferenceGpuValue(path);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->find('\n'), std::string::npos);
  absl::StatusOr<GpuSpec> g = GpuProfileOrPreset(*v);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->name, "mine");
  EXPECT_EQ(g->fp32_flops, 2e12);
  EXPECT_EQ(g->memory_bw, 1e11);
  EXPECT_EQ(ReferenceGpuValue("h100").value(), "h100");
  EXPECT_EQ(ReferenceGpuValue("h200").value(), "h200");  // not a file: GpuPreset says the choices
}

TEST_F(ProfileFileTest, ErrorsNameTheLineAndNeverQuoteTheFile) {
  const std::string secret = "s3cret-Value";
  std::string path = Write("a.profile", "name = x\nfp32_flops = " + secret + "\n");
  EXPECT_EQ(Error(path), "reference_gpu: gpu profile " + path +
                             " line 2 (fp32_flops): want a number >= 0");
  // Not a profile at all (a password file, say): line 1, nothing quoted.
  path = Write("passwd", "root:" + secret + ":0:0::/root:/bin/sh\n");
  EXPECT_EQ(Error(path), "reference_gpu: gpu profile " + path + " line 1: want key = value");
  path = Write("b.profile", "name = x\n" + secret + " key = 1\n");
  EXPECT_EQ(Error(path), "reference_gpu: gpu profile " + path + " line 2: unknown key");
  path = Write("c.profile", "name = x\nwarp_speed = " + secret + "\n");
  EXPECT_EQ(Error(path), "reference_gpu: gpu profile " + path + " line 2 (warp_speed): unknown key");
  path = Write("d.profile", "name = x\ngemm_grid = 8x8:" + secret + "\n");
  EXPECT_EQ(Error(path),
            "reference_gpu: gpu profile " + path + " line 2 (gemm_grid): want MxKxN:rate entries");
  // The file's name line is its text too: the path names the profile.
  path = Write("e.profile", "name = " + secret + "\nfp32_flops = 1\n");
  EXPECT_EQ(Error(path),
            "reference_gpu: gpu profile " + path + ": fp32_flops and memory_bw must be > 0");
}

TEST_F(ProfileFileTest, WhatIsNoTextFileIsRefusedByWhatItIs) {
  EXPECT_EQ(Error(dir_), "reference_gpu: " + dir_ + ": a directory, not a regular file");
  EXPECT_EQ(Error("/dev/zero"), "reference_gpu: /dev/zero: a device, not a regular file");
  const std::string binary = Write("bin.profile", std::string("name = x\n\xff\x00", 11));
  EXPECT_EQ(Error(binary),
            "reference_gpu: " + binary + ": not a text file (line 2 holds bytes that are not UTF-8)");
  const std::string big = Write("big.profile", std::string(kMaxGpuProfileBytes + 1, '#'));
  EXPECT_EQ(Error(big), absl::StrCat("reference_gpu: ", big, ": ", kMaxGpuProfileBytes + 1,
                                     " bytes, over the limit of ", kMaxGpuProfileBytes));
  absl::StatusOr<std::string> missing = ReferenceGpuValue(dir_ + "/none.profile");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace hpt
