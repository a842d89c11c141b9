#include "devices/gpu/roofline.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hpt {
// devices/gpu/profiles/h200.profile's text (//devices:h200_profile_cc).
extern const char kH200Profile[];

namespace {

// What a board draws over its bare idle once a program holds a CUDA
// context: S. S. Vadari, "The Model Parking Tax" (arXiv 2605.23918, 2026)
// measured +26-50 W on the HBM boards it tested (H100 80 GB, A100 80 GB),
// with no kernel running: the context forces a clock (DVFS) step. We take
// the range's geometric centre. The V100 was not measured; its preset takes
// the HBM boards' figure.
constexpr double kContextPowerW = 36;

// How ops reach a GPU from LibTorch, the same for every preset: these are
// properties of the host and the framework more than of the board.
void SetLaunchPath(GpuSpec* g) {
  // Host time per op, LibTorch C++ eager with autograd: Meta's Holistic
  // Trace Analysis documentation ("CUDA kernel launch statistics") gives
  // 5-20 us for the CPU side of a launch; we take the range's geometric
  // centre, 10 us. The H100 step measured on 2026-11-24 (11.3 us a kernel,
  // C++ eager) was known when this rule was chosen; hpt_calibrate measures
  // a machine's own figure.
  g->dispatch_s = 10e-6;
  // An op that launches nothing (a view) is charged a launch's host time,
  // the rule the presets were checked under. HTA's figure is per launch,
  // so for views this is an over-count; a view's own cost (0.25 us, as
  // hpt_calibrate measures it on a CPU host) puts every C++ eager h100
  // row of the measured H100 table at 0.55-0.77 of its measured step, which
  // says the H100's host spent more per launch than the 10 us taken from
  // HTA's range. No source gives either figure for that host.
  g->host_op_s = g->dispatch_s;
  // HTA's figure is a program's host time per launch, so the frames around
  // each launch and autograd's recording are in it.
  g->frame_s = 0;
  g->history_s = 0;
  // The backward engine's time per autograd node beyond its kernels, a
  // host property: measured by hpt_calibrate --device=cpu (NodeS in
  // workers/calibrate/host_calibration.cc: the backward of a chain of relus, less an
  // op's dispatch) on an Intel Xeon (Sapphire Rapids, KVM, 2 vCPUs) on
  // 2026-11-25: 2.24 us. No published figure found; the host that drove
  // the H100 measured on 2026-11-24 is not known.
  g->node_s = 2.2e-6;
  g->python_op_s = kPythonOpS;
  // NVIDIA, "Getting Started with CUDA Graphs" (A. Gray, 2019): a 2.9 us
  // kernel takes 3.4 us per kernel replayed as a graph: 0.5 us a node.
  g->graph_node_s = 0.5e-6;
  // Assumed: the device time of a kernel with no work to speak of. Boyer's
  // empty-kernel measurement (U. Virginia, "CUDA kernel overhead") gives
  // 3 us per asynchronous launch, host included, on Tesla-era GPUs, an
  // upper bound; we take 1 us. hpt_calibrate measures it on CUDA.
  g->min_kernel_s = 1e-6;
  // Achieved shares of peak, from the Empirical Roofline Toolkit on a V100
  // (Yang, Kurth and Williams, "Hierarchical Roofline analysis for GPUs",
  // CCPE 32(20), 2020): HBM 828 GB/s of 900 (0.92) and 7.07 TFLOP/s FP64
  // of 7.8 (0.906); the same shares are used for every preset.
  g->compute_share = 0.906;
  g->memory_share = 0.92;
}

// The rates of `table`, at most `cap` bytes a second.
std::vector<std::pair<double, double>> Capped(std::vector<std::pair<double, double>> table,
                                              double cap) {
  for (auto& [bytes, rate] : table) rate = std::min(rate, cap);
  return table;
}

// Hopper's kernels as measured: the device-time tables of an NVIDIA H200
// that hpt_calibrate measured (devices/gpu/profiles/h200.profile records
// the machine, build and command), each kernel replayed as a CUDA graph.
// The H200 is the H100 SXM's processor, GH100 with 132 SMs at up to 1980
// MHz, with more and faster memory: 4.8 TB/s of HBM3e against 3.35 TB/s
// of HBM3 (NVIDIA H200 and H100 datasheets). So its products, norms,
// attention and shortest kernel stand for the H100's, and its bandwidth
// tables are capped at the H100's achieved bandwidth. Before these, the
// preset priced a kernel from the datasheet's peaks, which puts a small
// product at nanoseconds; the 1 us assumed for the shortest kernel was the
// only floor, and a whole-step graph of small kernels came out 2-4x
// faster than the H100 measured on 2026-11-24.
void UseHopperKernels(GpuSpec* g) {
  // Parsed once: a sweep asks for the preset at every point.
  static const absl::StatusOr<GpuSpec>* const parsed =
      new absl::StatusOr<GpuSpec>(ParseGpuProfile(kH200Profile));
  if (!parsed->ok()) return;  // the build's own file; devices:gpu_roofline_test parses it
  const GpuSpec* h200 = &**parsed;
  const double cap = g->memory_bw * g->memory_share;
  g->gemm_rates = h200->gemm_rates;
  g->gemm_grid = h200->gemm_grid;
  g->gemm_grid_nt = h200->gemm_grid_nt;
  g->gemm_grid_tn = h200->gemm_grid_tn;
  g->gemm_grid_streamed = h200->gemm_grid_streamed;
  g->gemm_grid_streamed_result = h200->gemm_grid_streamed_result;
  g->attention_grid = h200->attention_grid;
  g->attention_backward_grid = h200->attention_backward_grid;
  g->attention_call_s = h200->attention_call_s;
  g->attention_backward_call_s = h200->attention_backward_call_s;
  g->norm_grid = h200->norm_grid;
  g->norm_backward_grid = h200->norm_backward_grid;
  g->softmax_grid = h200->softmax_grid;
  g->softmax_backward_grid = h200->softmax_backward_grid;
  g->gemm_grid_batched = h200->gemm_grid_batched;
  g->memory_rates = Capped(h200->memory_rates, cap);
  g->memory_rates_inplace = Capped(h200->memory_rates_inplace, cap);
  g->memory_rates_streamed = Capped(h200->memory_rates_streamed, cap);
  // NVIDIA H100 datasheet: 50 MB of L2 (the H200 measured 63 MB).
  g->cache_bytes = 50e6;
  // The shortest kernel as a graph replays it (a one-element add: 1.10 us
  // on the H200); a replayed table holds each node's own cost already.
  g->min_kernel_s = h200->min_kernel_s;
  g->graph_node_s = 0;
}

// The output tiles of the fp32 batched products cuBLAS ran under PyTorch
// 2.1 (CUDA 12.1), from the kernel names in the training split of
// NeuSight's published traces (Lee et al., ASPLOS 2025,
// scripts/asplos/data/dataset/train/collect/bmm at
// db1fdc966633fe96c0717e0706e7621ad0921ed2): on a V100 PCIe, of 17,694
// batches, volta_sgemm_64x64 10,040, 32x128 6,113, 128x32 1,491 (one
// tile's 4,096 results, in three shapes; the model takes the one that
// pads a batch least); on an A100 PCIe 40 GB, of 16,661,
// ampere_sgemm_128x128 16,588. Its test split, which kernel_holdout
// checks the presets against, was not read to choose them.
const std::vector<std::pair<int64_t, int64_t>> kVoltaBatchedTiles = {
    {64, 64}, {32, 128}, {128, 32}};
const std::vector<std::pair<int64_t, int64_t>> kAmpereBatchedTiles = {{128, 128}};
// On a Tesla T4 (Turing) in the same split, of 17,697 batches:
// volta_sgemm_64x64 7,753, 128x64 7,226, 128x32 2,489 (32x128: 180).
const std::vector<std::pair<int64_t, int64_t>> kTuringBatchedTiles = {
    {64, 64}, {128, 64}, {128, 32}};

// A board as its datasheet gives it. Idle power is assumed, since
// datasheets give no idle figure: a tenth to an eighth of the board's
// limit on the SXM boards, and the same chip's figure on its PCIe cards.
struct Datasheet {
  const char* name;
  double fp32_flops, tf32_flops, bf16_flops, memory_bw, load_power_w, idle_power_w;
  int64_t sm_count;                                               // the architecture whitepaper's
  const std::vector<std::pair<int64_t, int64_t>>* batched_tiles;  // null: none
  const char* source;
  // Achieved shares of the peaks; 0: SetLaunchPath's (the V100's, from the
  // Empirical Roofline Toolkit). A board in the train split of NeuSight's
  // published kernels (db1fdc9, train/collect/{linear,add}) takes its own,
  // by one rule: the fastest fp32 product of 1e11 FLOPs or more over the
  // fp32 peak, and the bytes a second of the fastest add of 5e7 elements
  // or more (three operands of 4 bytes) over the bandwidth. The rule was
  // set for the T4 without reading its test split, which kernel_holdout
  // checks against; the V100 and A100 PCIe cards' test-split figures were
  // known when it was applied to them, unchanged.
  double compute_share = 0, memory_share = 0;
  // Sets the kernel tables a board of the same processor measured; null:
  // the datasheet's peaks price every kernel.
  void (*measured_kernels)(GpuSpec*) = nullptr;
};

// The presets, in the order GpuPresetNames gives them. The V100 and A100
// SM counts are their architecture whitepapers' (80 and 108 SMs on every
// board of each); H100 SXM5's is 132.
const Datasheet kDatasheets[] = {
    // NVIDIA Tesla V100 SXM2 datasheet: 15.7 TFLOP/s fp32, 125 TFLOP/s
    // tensor (fp16; bf16 does not exist on Volta), 900 GB/s HBM2, 300 W.
    {"v100", 15.7e12, 0, 125e12, 900e9, 300, 40, 80, &kVoltaBatchedTiles,
     "v100 preset: NVIDIA V100 SXM2 datasheet; launch path as cited in roofline.cc"},
    // NVIDIA A100 SXM4 40 GB datasheet: 19.5 TFLOP/s fp32, 156 TF32, 312
    // bf16 (dense), 1,555 GB/s HBM2, 400 W.
    {"a100", 19.5e12, 156e12, 312e12, 1555e9, 400, 50, 108, &kAmpereBatchedTiles,
     "a100 preset: NVIDIA A100 SXM4 datasheet; launch path as cited in roofline.cc"},
    // NVIDIA H100 SXM5 datasheet: 67 TFLOP/s fp32, 494.7 TF32 and 989.4
    // bf16 (dense, half the sparse figures), 3.35 TB/s HBM3, 700 W. Its
    // kernels are the H200's measured ones (UseHopperKernels).
    {"h100", 67e12, 494.7e12, 989.4e12, 3.35e12, 700, 70, 132, nullptr,
     "h100 preset: NVIDIA H100 SXM5 datasheet; kernels' device time measured on an H200 "
     "(devices/gpu/profiles/h200.profile); launch path as cited in roofline.cc",
     0, 0, UseHopperKernels},
    // NVIDIA V100 datasheet (2020), the PCIe card: 14 TFLOP/s fp32, 112
    // TFLOP/s tensor, 900 GB/s HBM2, 250 W (the SXM2's GV100 at a lower
    // boost clock: 1,380 MHz against 1,530).
    // Its train-split shares: 13.4 TFLOP/s (0.957) and 818 GB/s (0.909).
    {"v100-pcie", 14e12, 0, 112e12, 900e9, 250, 40, 80, &kVoltaBatchedTiles,
     "v100-pcie preset: NVIDIA V100 PCIe datasheet; achieved shares from NeuSight's V100 PCIe "
     "train split; launch path as cited in roofline.cc",
     0.957, 0.909},
    // NVIDIA A100 40GB PCIe product brief (PB-10137-001, 2020): the SXM4's
    // peaks and 1,555 GB/s under a 250 W limit.
    // Its train-split shares: 16.9 TFLOP/s (0.866; at 250 W the card holds
    // its clock less than the SXM4 at 400 W) and 1,325 GB/s (0.852).
    {"a100-pcie", 19.5e12, 156e12, 312e12, 1555e9, 250, 50, 108, &kAmpereBatchedTiles,
     "a100-pcie preset: NVIDIA A100 40GB PCIe product brief; achieved shares from NeuSight's "
     "A100 PCIe 40 GB train split; launch path as cited in roofline.cc",
     0.866, 0.852},
    // NVIDIA A100 datasheet (2021), 80GB PCIe: the same peaks, 1,935 GB/s
    // HBM2e, 300 W.
    {"a100-pcie-80gb", 19.5e12, 156e12, 312e12, 1935e9, 300, 50, 108, &kAmpereBatchedTiles,
     "a100-pcie-80gb preset: NVIDIA A100 80GB PCIe datasheet; launch path as cited in "
     "roofline.cc"},
    // NVIDIA T4 datasheet: 8.1 TFLOP/s fp32, 65 TFLOP/s fp16 tensor (no
    // bf16 on Turing), 320 GB/s GDDR6, 70 W; 40 SMs (Turing TU104 as the
    // T4 ships it: 2,560 CUDA cores, 64 an SM). Idle: an eighth of 70 W.
    // A 70 W board with GDDR6 reaches far less of its peaks than a V100;
    // its train-split shares: 3.68 TFLOP/s (0.45 of 8.14; the clock falls
    // at the power limit) and 243 GB/s (0.76).
    {"t4", 8.1e12, 0, 65e12, 320e9, 70, 9, 40, &kTuringBatchedTiles,
     "t4 preset: NVIDIA T4 datasheet; achieved shares from NeuSight's T4 train split; launch "
     "path as cited in roofline.cc",
     0.45, 0.76},
};

// The preset called `name`, or null.
const Datasheet* FindDatasheet(const std::string& name) {
  for (const Datasheet& d : kDatasheets) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> GpuPresetNames() {
  std::vector<std::string> names;
  for (const Datasheet& d : kDatasheets) names.push_back(d.name);
  return names;
}

bool IsGpuPreset(const std::string& name) { return FindDatasheet(name) != nullptr; }

absl::StatusOr<GpuSpec> GpuPreset(const std::string& name) {
  const Datasheet* sheet = FindDatasheet(name);
  if (sheet == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu preset '", name, "' is unknown; choose one of ",
        absl::StrJoin(GpuPresetNames(), ", "), ", or give a profile file (hpt_calibrate)"));
  }
  GpuSpec g;
  g.name = name;
  SetLaunchPath(&g);
  g.fp32_flops = sheet->fp32_flops;
  g.tf32_flops = sheet->tf32_flops;
  g.bf16_flops = sheet->bf16_flops;
  g.memory_bw = sheet->memory_bw;
  g.load_power_w = sheet->load_power_w;
  g.idle_power_w = sheet->idle_power_w;
  g.sm_count = sheet->sm_count;
  if (sheet->batched_tiles != nullptr) g.batched_tiles = *sheet->batched_tiles;
  g.source = sheet->source;
  if (sheet->compute_share > 0) g.compute_share = sheet->compute_share;
  if (sheet->memory_share > 0) g.memory_share = sheet->memory_share;
  if (sheet->measured_kernels != nullptr) sheet->measured_kernels(&g);
  // The least a launch-bound step draws (kContextPowerW); its kernels add
  // more, which hpt_calibrate measures as active_power_w.
  g.active_power_w = g.idle_power_w + kContextPowerW;
  return g;
}

double PeakFlops(const GpuSpec& gpu, GpuPrecision precision) {
  if (precision == GpuPrecision::kTf32 && gpu.tf32_flops > 0) return gpu.tf32_flops;
  if (precision == GpuPrecision::kBf16 && gpu.bf16_flops > 0) return gpu.bf16_flops;
  return gpu.fp32_flops;
}

GpuCost RooflineCost(const GpuSpec& gpu, GpuPrecision precision, double flops,
                     double bytes) {
  const double compute_s = flops / PeakFlops(gpu, precision);
  const double memory_s = bytes / gpu.memory_bw;
  GpuCost cost;
  cost.compute_bound = compute_s >= memory_s;
  cost.time_s = std::max(compute_s, memory_s) / gpu.efficiency;
  cost.energy_j = cost.time_s * gpu.load_power_w;
  return cost;
}

}  // namespace hpt
