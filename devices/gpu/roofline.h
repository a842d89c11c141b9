// A reference GPU as a profile, so that measured GPU steps and simulated
// ReRAM / systolic costs are compared on one footing: its peak rates and
// bandwidth (datasheets), how ops reach it (host dispatch per op from
// LibTorch C++ and from Python, a CUDA graph node's cost, the shortest
// kernel), achieved GEMM rates by size, and board power idle, stepping
// and at load. Presets carry published figures with their sources;
// `hpt_calibrate` measures a device's own profile and writes it as text
// that `reference_gpu=FILE` reads back (docs/cost-model.md, "GPU
// profiles").
//
//   ASSIGN_OR_RETURN(GpuSpec h100, GpuPreset("h100"));
//   ASSIGN_OR_RETURN(GpuSpec mine, ParseGpuProfile(text));   // calibrated
//   GpuCost c = RooflineCost(h100, GpuPrecision::kFp32, flops, bytes);
#ifndef HPT_DEVICES_GPU_ROOFLINE_H_
#define HPT_DEVICES_GPU_ROOFLINE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/gpu/gemm_grid.h"

namespace hpt {

enum class GpuPrecision { kFp32, kTf32, kBf16 };

struct GpuSpec {
  std::string name;
  double fp32_flops = 0;   // FLOP/s, CUDA cores
  double tf32_flops = 0;   // FLOP/s, tensor cores (0: none)
  double bf16_flops = 0;   // FLOP/s, tensor cores, dense (fp16 on V100)
  double memory_bw = 0;    // bytes/s
  double load_power_w = 0;
  double idle_power_w = 0;
  // Board power while a launch-bound step runs (clocks up, SMs mostly
  // waiting); 0: idle_power_w.
  double active_power_w = 0;
  double stepping_power_w() const { return active_power_w > 0 ? active_power_w : idle_power_w; }
  // Share of peak a well-shaped kernel reaches (both compute and memory);
  // 0.7 is typical of large cuBLAS GEMMs and streaming kernels. Only the
  // whole-step roofline (RooflineCost) uses it.
  double efficiency = 0.7;
  // Achieved shares of peak for the kernel model (devices/gpu/kernel_cost.h).
  double compute_share = 0.906;
  double memory_share = 0.92;
  // Measured GEMM rates, (size, achieved FLOP/s); a product's size is the
  // FLOPs of the square product of the same arithmetic intensity
  // (GemmSize, devices/gpu/kernel_cost.h), so a skinny or batched product
  // is rated as the small square one it resembles. The kernel model
  // interpolates them for products (fp32). Empty: peak times
  // compute_share.
  std::vector<std::pair<double, double>> gemm_rates;
  // Measured GEMM rates by shape (devices/gpu/gemm_grid.h): a product
  // whose shape was recorded is rated from it, before gemm_rates.
  GemmGrid gemm_grid;
  // The same with an operand stored transposed (GemmShape's layout): the
  // second (x W^T, a linear layer's forward) and the first (g^T x, its
  // weight gradient). Empty: gemm_grid.
  GemmGrid gemm_grid_nt, gemm_grid_tn;
  // Measured bandwidth of element-wise work, (bytes moved, achieved
  // bytes/s), by size: small working sets stay in caches. Empty:
  // memory_bw times memory_share.
  std::vector<std::pair<double, double>> memory_rates;
  // The same two, measured with the operands read from memory rather than
  // cache: a step whose model state (parameters, gradients, optimizer
  // moments) outgrows cache_bytes streams its weights each time it uses
  // them, so its tasks are rated from these where they are measured.
  GemmGrid gemm_grid_streamed;
  std::vector<std::pair<double, double>> memory_rates_streamed;
  // A weight gradient's product (g^T x, the tn layout) in such a step: its
  // result is the gradient, model state, so it is its result that goes to
  // memory (a CPU first reads each line it writes). Empty: the product is
  // rated as the other streamed products.
  GemmGrid gemm_grid_streamed_result;
  // Element-wise ops that write their operand in place (cache-resident):
  // on a CPU they skip the read a write to a new output first makes of
  // its lines, so they move their bytes faster.
  std::vector<std::pair<double, double>> memory_rates_inplace;
  // Fused attention (scaled_dot_product_attention's kernel), forward and
  // backward: achieved FLOP/s by query length, key length and head
  // dimension (as m, n and k), FLOPs counted as the recorder counts them
  // (workers/gpu/kernel_recorder.cc). Empty: rated as a GEMM.
  GemmGrid attention_grid, attention_backward_grid;
  // Each such call's fixed cost beyond its dispatch (its threads, its
  // scratch buffers), forward and backward.
  double attention_call_s = 0, attention_backward_call_s = 0;
  // Layer norm (native_layer_norm), forward and backward: achieved
  // elements a second (rows x normalised width) by rows and width (as m
  // and n; k is 1). A CPU's costs more than its bytes: on the Intel Xeon
  // VM 0.35-1.1 ns an element, 2.5-7.7x an element-wise op of its size,
  // the most on narrow rows. Empty: rated as element-wise work, the
  // forward's bytes 3/2 of those recorded (it reads its input twice:
  // kernel_cost.cc).
  GemmGrid norm_grid, norm_backward_grid;
  // Softmax over a row (_softmax, _softmax_backward_data), forward and
  // backward: achieved elements a second by rows and row width (as m and
  // n; k is 1). A row reduction then a write: a warp or block per row,
  // so its rate falls short of an element-wise op of its bytes where rows
  // are narrow. Empty: rated as element-wise work.
  GemmGrid softmax_grid, softmax_backward_grid;
  // A batch of products (bmm): achieved FLOP/s of the whole batch by one
  // product's m, k and n, with the batch large enough to fill the device
  // (hpt_calibrate: BatchOf, calibration_shapes.h). A smaller batch
  // still takes one product's time (a wave of its tiles). Empty: a batch
  // is rated as the one product of all its rows (kernel_cost.cc).
  GemmGrid gemm_grid_batched;
  // Without that grid: the output tiles (rows x columns) a batched product
  // kernel computes a thread block at a time, the library's choice on
  // this architecture, and the board's streaming multiprocessors. A batch
  // is its padded tiles in waves over the SMs (kernel_cost.cc,
  // BatchedTileFlops); where several tiles are listed, the one that pads
  // least. Empty or 0: its bare work.
  std::vector<std::pair<int64_t, int64_t>> batched_tiles;
  double sm_count = 0;
  double cache_bytes = 0;  // the last-level cache; 0: unknown (taken as holding the state)
  // How ops reach the device.
  // Host time per op, LibTorch C++ eager; a calibrated profile's is an op
  // that records no autograd history (history_s adds that), a preset's a
  // whole program's per launch, everything included.
  double dispatch_s = 0;
  // Host time of an op of the program's own that launches no kernel (a
  // view, a reshape, a detach), its frames aside: a calibrated profile's
  // is measured on a cycle of views; a preset's is its dispatch_s (an
  // over-count: roofline.cc). A profile text without it takes dispatch_s.
  double host_op_s = 0;
  // Host time per dispatcher frame that launches nothing and is no op of
  // the program's own (a view inside an op, a composite's own frame).
  // Presets: 0, their dispatch_s being a whole program's host time per
  // launch, such frames included.
  double frame_s = 0;
  // Host time an op or frame adds when it records autograd history (grad
  // mode on, an input that needs gradients). Presets: 0, as frame_s.
  double history_s = 0;
  // Host time the backward engine spends on a node beyond its ops (its
  // queue, its input buffers). Presets: 0, as frame_s.
  double node_s = 0;
  double python_op_s = 0;   // added per op called from Python
  double graph_node_s = 0;  // a CUDA graph node beyond its kernel's work
  double min_kernel_s = 0;  // device time of the smallest kernel
  // The host runs each op's work itself (a CPU): an op costs its dispatch
  // plus its work, not the larger of the two.
  bool synchronous = false;
  std::string source;  // where the profile came from, in a line
};

// Python's own layer per op: pytorch/pytorch#41383 measures 6.8 us for
// `2*x` with autograd from Python on a CPU (5 us without), where a
// maintainer puts the same op from C++ at about 1 us: Python adds ~5 us.
// Calibration from C++ cannot measure it, so every profile carries this.
inline constexpr double kPythonOpS = 5e-6;

// A board from its datasheet (GpuPresetNames: v100, a100, h100, v100-pcie,
// a100-pcie, a100-pcie-80gb, t4).
absl::StatusOr<GpuSpec> GpuPreset(const std::string& name);
std::vector<std::string> GpuPresetNames();

// A profile as text, one "key = value" a line ('#' starts a comment, to the
// end of its line; ';' also separates entries, so a profile fits on one
// line). Keys are GpuSpec's fields; gemm_rates and the memory_rates are "size:rate,size:rate",
// the gemm grids "MxKxN:rate,..." (devices/gpu/gemm_grid.h). Unknown keys
// and bad numbers are INVALID_ARGUMENT naming the line.
absl::StatusOr<GpuSpec> ParseGpuProfile(const std::string& text);
std::string GpuProfileText(const GpuSpec& gpu);
// `reference_gpu`'s value: a preset name, or a profile's text.
absl::StatusOr<GpuSpec> GpuProfileOrPreset(const std::string& value);
bool IsGpuPreset(const std::string& name);
// `reference_gpu` as a person gives it: a preset name and a profile's text
// stay as they are; a path to a profile file is read, checked and returned
// as the profile's text on one line. NOT_FOUND naming the path when it
// cannot be read; INVALID_ARGUMENT when it is no regular file, is over
// kMaxGpuProfileBytes, is not text or is not a profile, naming the line
// and never quoting the file.
inline constexpr int64_t kMaxGpuProfileBytes = 1 << 20;  // a calibrated profile is ~20 KB
absl::StatusOr<std::string> ReferenceGpuValue(const std::string& value);

// The peak rate at `precision` (fp32 where the GPU has no such units).
double PeakFlops(const GpuSpec& gpu, GpuPrecision precision);

struct GpuCost {
  double time_s = 0;
  double energy_j = 0;
  bool compute_bound = false;
};

GpuCost RooflineCost(const GpuSpec& gpu, GpuPrecision precision, double flops,
                     double bytes);

}  // namespace hpt

#endif  // HPT_DEVICES_GPU_ROOFLINE_H_
