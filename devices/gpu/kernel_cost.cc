#include "devices/gpu/kernel_cost.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace hpt {

bool LaunchesNoKernel(std::string_view op) {
  // Views, aliasing and metadata: they change strides or sizes, not data.
  static constexpr std::string_view kNoKernel[] = {
      "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::t", "aten::transpose",
      "aten::permute", "aten::expand", "aten::expand_as", "aten::as_strided", "aten::slice",
      "aten::select", "aten::unsqueeze", "aten::squeeze", "aten::alias", "aten::detach",
      "aten::detach_", "aten::lift", "aten::lift_fresh", "aten::empty", "aten::empty_like",
      "aten::empty_strided", "aten::resize_", "aten::set_", "aten::to", "aten::_to_copy",
      "aten::contiguous", "aten::view_as", "aten::flatten", "aten::unflatten", "aten::split",
      "aten::chunk", "aten::unbind", "aten::narrow", "aten::requires_grad_", "aten::resolve_conj",
      "aten::resolve_neg", "aten::_reshape_alias", "aten::conj", "aten::_conj", "aten::numpy_T",
      "aten::mT", "aten::diagonal", "aten::movedim", "aten::swapaxes", "aten::unsqueeze_",
      "detach_",
      // Type promotion reads dtypes, not data (pow(x, 0.7) asks it on the host).
      "aten::result_type", "aten::can_cast", "aten::promote_types",
      // AccumulateGrad's own detach (no namespace).
      "detach"};
  return std::find(std::begin(kNoKernel), std::end(kNoKernel), op) != std::end(kNoKernel);
}

KernelKind KernelKindOf(std::string_view op) {
  if (op.rfind("aten::_scaled_dot_product_", 0) == 0) {
    return op.find("_backward") != std::string_view::npos ? KernelKind::kAttentionBackward
                                                          : KernelKind::kAttention;
  }
  if (op == "aten::bmm" || op == "aten::baddbmm") return KernelKind::kBatchedGemm;
  if (op == "aten::mm" || op == "aten::addmm" || op == "aten::mv" || op == "aten::addmv") {
    return KernelKind::kGemm;
  }
  if (op == "aten::native_layer_norm") return KernelKind::kNorm;
  if (op == "aten::native_layer_norm_backward") return KernelKind::kNormBackward;
  if (op == "aten::_softmax") return KernelKind::kSoftmax;
  if (op == "aten::_softmax_backward_data") return KernelKind::kSoftmaxBackward;
  // ATen names an op that writes its first operand with a trailing
  // underscore (add_, mul_, addcmul_).
  if (!op.empty() && op.back() == '_') return KernelKind::kElementwiseInPlace;
  return KernelKind::kElementwise;
}

namespace {

// Log-log interpolation in a sorted (size, rate) table, held at its ends.
double Interpolate(const std::vector<std::pair<double, double>>& r, double size) {
  if (size <= r.front().first) return r.front().second;
  if (size >= r.back().first) return r.back().second;
  auto hi = std::upper_bound(r.begin(), r.end(), std::make_pair(size, 0.0));
  auto lo = std::prev(hi);
  const double t = std::log(size / lo->first) / std::log(hi->first / lo->first);
  return std::exp(std::log(lo->second) + t * std::log(hi->second / lo->second));
}

}  // namespace

double GemmSize(double flops, double bytes) {
  if (bytes <= 0 || flops <= 0) return flops;
  const double n = 1.5 * flops / (bytes / 4);  // fp32 elements
  return std::min(flops, 2 * n * n * n);
}

namespace {

// A product's achieved rate, and whether a calibration measured it (a
// measured rate holds the product's own traffic): GemmRate's order of
// preference, said once.
struct ProductRate {
  double flops_per_s = 0;
  bool measured = false;
};

// A product's rate at `precision`, from `fp32_rate`, the rate a table
// measured in fp32 at its shape, and `best_fp32_rate`, that table's best.
// Tables are measured in fp32; bf16 (autocast) and tf32 run a product on
// other units. Its time at the table's rate less its work at the table's
// best rate is the part that does not scale with the arithmetic units
// (the launch, the tiles' set-up, the memory it moves): a small product
// is latency-bound whatever its precision. That part is kept and the work
// is done at the precision's peak. On an NVIDIA H200 (2026-11-27, the
// baseline probe, wind preset) the whole-step graph took 4.34 ms in fp32
// and 4.41 ms under bf16 autocast at batch 1, 12.7 and 6.14 ms at batch
// 32: latency-bound products gained nothing, large ones half.
// Per FLOP, so a shape's FLOPs cancel.
double AtPrecision(const GpuSpec& gpu, GpuPrecision precision, double fp32_rate,
                   double best_fp32_rate) {
  if (precision == GpuPrecision::kFp32 || fp32_rate <= 0) return fp32_rate;
  const double fixed_s = std::max(0.0, 1 / fp32_rate - 1 / best_fp32_rate);
  return 1 / (fixed_s + 1 / (PeakFlops(gpu, precision) * gpu.compute_share));
}

// `batched`: one product of a batch (KernelKind::kBatchedGemm), whose
// result is no weight gradient whatever its layout.
ProductRate RateOfProduct(const GpuSpec& gpu, GpuPrecision precision, double flops,
                          double bytes, const GemmShape& shape, bool streamed,
                          bool batched = false) {
  if (shape.known()) {
    const bool weight_gradient = shape.a_transposed && !batched;
    const GemmGrid& grid =
        streamed && weight_gradient && !gpu.gemm_grid_streamed_result.empty()
            ? gpu.gemm_grid_streamed_result
        : streamed && !gpu.gemm_grid_streamed.empty()     ? gpu.gemm_grid_streamed
        : shape.b_transposed && !gpu.gemm_grid_nt.empty() ? gpu.gemm_grid_nt
        : shape.a_transposed && !gpu.gemm_grid_tn.empty() ? gpu.gemm_grid_tn
                                                          : gpu.gemm_grid;
    if (!grid.empty()) {
      return {AtPrecision(gpu, precision, grid.Rate(shape), grid.BestRate()), true};
    }
  }
  if (gpu.gemm_rates.empty() || flops <= 0) {
    return {PeakFlops(gpu, precision) * gpu.compute_share, false};
  }
  const double rate = Interpolate(gpu.gemm_rates, GemmSize(flops, bytes));
  if (precision == GpuPrecision::kFp32) return {rate, true};
  double best = 0;
  for (const auto& [size, r] : gpu.gemm_rates) best = std::max(best, r);
  return {AtPrecision(gpu, precision, rate, best), true};
}

// A layer norm's forward (ATen's vectorized_layer_norm_kernel, one thread
// block a row) reads its row once for the statistics (compute_stats) and
// again to normalise it, then writes it: its input twice and its output
// once, where the recorder counts each operand once. Input and output are
// the same size (the parameters and statistics are a row's worth), so a
// profile without a measured layer norm table moves 3/2 of the recorded
// bytes. On NeuSight's published V100 kernels (PyTorch 2.1, rows of 768
// to 16384, whose re-read does not stay in the V100's 6 MB L2) the
// two-pass model priced the forward at 0.54-0.74 of its measured time
// (docs/cost-model.md); that set was not used to set this factor, which
// is the kernel's structure.
constexpr double kLayerNormForwardTraffic = 1.5;

}  // namespace

// Whether ATen's softmax forward over contiguous rows (host_softmax,
// SoftMax.cu, as LibTorch 2.11 builds it: its libtorch_cuda.so holds
// softmax_warp_forward up to 2^11 elements and cunn_SoftMaxForwardReg of 1
// to 9 registers) reads a row once. A row of at most 2,048 elements and 8
// KiB goes to a warp (softmax_warp_forward). A wider one gets a block of
// min(width, 1,024) threads (SoftMaxForward_getBlockSize) and is held in
// registers where that is fewer than ten elements a thread
// (cunn_SoftMaxForwardReg: widths to 9,216), else in the block's shared
// memory where it fits 48 KiB (sharedMemPerBlock on every CUDA GPU) less
// the reduction scratch of a float a warp and divides into 16-byte vectors
// (cunn_SoftMaxForwardSmem). Each of these reads the input once and writes
// the output, the bytes the recorder counts. Any other row
// (cunn_SoftMaxForward) is read three times, for its maximum, for its sum
// of exponentials and to write the result. PyTorch 2.1 had neither the
// 2,048-wide warps nor the register and shared-memory kernels, so its
// rows past 1,024 were all read three times (docs/cost-model.md).
bool SoftmaxReadsRowOnce(int64_t width, double element_bytes) {
  if (width <= 0 || element_bytes <= 0) return true;
  const double w = double(width);
  if (w <= 2048 && w * element_bytes <= 8192) return true;
  constexpr double kThreads = 1024, kWarp = 32, kSharedBytes = 48 * 1024, kVectorBytes = 16;
  const double threads = std::min(w, kThreads);
  if (std::ceil(w / threads) < 10) return true;
  const double scratch = threads / kWarp * 4;
  const double vector = std::max(1.0, std::round(kVectorBytes / element_bytes));
  return w < (kSharedBytes - scratch) / element_bytes && std::fmod(w, vector) == 0;
}

namespace {

// How many times a kernel of `kind` moves the traffic of its rows read
// once: 2 for a softmax forward whose rows are read three times (its
// input three times and its output once, against once each), else 1.
// `bytes`, the recorded input and output, give the element size.
double RowPasses(KernelKind kind, const GemmShape& shape, double bytes) {
  if (kind != KernelKind::kSoftmax || shape.m <= 0 || shape.n <= 0 || bytes <= 0) return 1;
  return SoftmaxReadsRowOnce(shape.n, bytes / (2 * double(shape.m) * double(shape.n))) ? 1 : 2;
}

// What a kernel of `kind` moves through memory against the `bytes` the
// recorder counts (each operand once), where no measured rate of its own
// holds its traffic.
double RecordedTraffic(KernelKind kind, const GemmShape& shape, double bytes) {
  if (kind == KernelKind::kNorm) return kLayerNormForwardTraffic * bytes;
  return RowPasses(kind, shape, bytes) * bytes;
}

// NVIDIA's CUDA C++ Programming Guide (technical specifications, compute
// capabilities 7.0 to 9.0): 65,536 32-bit registers per SM. A SIMT sgemm
// thread computes an 8 x 8 outer product of its tile (CUTLASS, "Efficient
// GEMM in CUDA": the thread tile), 64 accumulators, with as many
// registers again for its fragments of the operands and its addresses:
// two registers a result, so an SM holds 32,768 results of its tiles at
// once. An assumption of the kernels' register use; a profile that
// measures its batched products (gemm_grid_batched) needs none.
constexpr double kResultsPerSm = 65536.0 / 2;

// A batch of products (bmm) as the one product whose tiles it runs: a
// batched GEMM kernel gives each product the thread blocks its plain GEMM
// would, one per output tile, each a k-deep loop, and the device runs the
// batch's blocks in waves over its SMs (NVIDIA, "Matrix Multiplication
// Background User's Guide": tiles and wave quantization; Habitat, Yu et
// al., USENIX ATC 2021, scales a kernel by its waves). B products of m x k
// x n are so B m x k x n's tiles: one product of B m rows, read off the
// measured grid at its shape. Only the second operand differs, each
// product reading its own, which the memory bound charges. Until
// 2026-11-28 each product was rated as if run alone, so a batch of 48,000
// products of 12 x 16 x 12 was priced at 102 ms; an H200 ran it in 119 us.
// The products in a batch of `flops` whose each is `one` (known), at least 1.
double ProductsIn(double flops, const GemmShape& one) {
  return std::max(1.0, std::round(flops / (2.0 * double(one.m) * double(one.k) * double(one.n))));
}

GemmShape AsOneProduct(double flops, const GemmShape& one) {
  if (!one.known()) return one;
  GemmShape all = one;
  all.m = int64_t(double(one.m) * ProductsIn(flops, one));
  return all;
}

// An fp32 batch of products (B of m x k x n) as the work its thread
// blocks do, without a measured batched grid: each product's output is
// cut into the architecture's tiles (GpuSpec::batched_tiles), a tile's
// block computing all of it whether the product fills it or not (tile
// quantization, NVIDIA "Matrix Multiplication Background User's Guide"),
// and the device runs the blocks in waves of as many as its SMs hold
// (kResultsPerSm), the last wave as long as a full one (wave
// quantization, the same guide; Habitat, Yu et al., USENIX ATC 2021,
// scales a kernel's time by its waves). Of several tiles, the one doing
// the least work. 0 where the profile lists no tile.
double BatchedTileFlops(const GpuSpec& gpu, double flops, const GemmShape& one) {
  if (gpu.batched_tiles.empty() || !one.known() || flops <= 0) return 0;
  const double m = double(one.m), k = double(one.k), n = double(one.n);
  const double products = ProductsIn(flops, one);
  double least = 0;
  for (const auto& [rows, columns] : gpu.batched_tiles) {
    if (rows <= 0 || columns <= 0) continue;
    const double tile = double(rows) * double(columns);
    double blocks = products * std::ceil(m / double(rows)) * std::ceil(n / double(columns));
    if (gpu.sm_count > 0) {
      const double wave = gpu.sm_count * std::max(1.0, std::floor(kResultsPerSm / tile));
      blocks = std::ceil(blocks / wave) * wave;
    }
    const double work = blocks * 2 * tile * k;
    if (least == 0 || work < least) least = work;
  }
  return least;
}

// A batch of products on the measured batched grid: the batch's work at
// the rate a batch of products of its shape reached once it filled the
// device, and at least one product's own time, from its plain grid (a
// batch of few products is one wave of tiles, as long as one product's
// loop over k: the wave model of AsOneProduct's sources). The grid is
// measured in the plain layout and read for every layout. 0 without it.
double BatchedGridS(const GpuSpec& gpu, GpuPrecision precision, double flops, const GemmShape& one,
                    bool streamed) {
  const GemmGrid& grid = gpu.gemm_grid_batched;
  if (grid.empty() || !one.known() || flops <= 0) return 0;
  const double each = 2.0 * double(one.m) * double(one.k) * double(one.n);
  const double batch_rate = AtPrecision(gpu, precision, grid.Rate(one), grid.BestRate());
  const double alone_rate =
      RateOfProduct(gpu, precision, each, 0, one, streamed, /*batched=*/true).flops_per_s;
  return std::max(flops / batch_rate, alone_rate > 0 ? each / alone_rate : 0.0);
}

}  // namespace

double GemmRate(const GpuSpec& gpu, GpuPrecision precision, double flops, double bytes,
                const GemmShape& shape, bool streamed) {
  return RateOfProduct(gpu, precision, flops, bytes, shape, streamed).flops_per_s;
}

double MemoryRate(const GpuSpec& gpu, double bytes, bool streamed, bool in_place) {
  const auto& rates = streamed && !gpu.memory_rates_streamed.empty() ? gpu.memory_rates_streamed
                      : !streamed && in_place && !gpu.memory_rates_inplace.empty()
                          ? gpu.memory_rates_inplace
                          : gpu.memory_rates;
  if (rates.empty() || bytes <= 0) return gpu.memory_bw * gpu.memory_share;
  return Interpolate(rates, bytes);
}

double AttentionRate(const GpuSpec& gpu, GpuPrecision precision, KernelKind kind,
                     const GemmShape& shape) {
  if (kind != KernelKind::kAttention && kind != KernelKind::kAttentionBackward) return 0;
  const GemmGrid& grid =
      kind == KernelKind::kAttentionBackward ? gpu.attention_backward_grid : gpu.attention_grid;
  if (!shape.known() || grid.empty()) return 0;
  return AtPrecision(gpu, precision, grid.Rate(shape), grid.BestRate());
}

double NormRate(const GpuSpec& gpu, GpuPrecision precision, KernelKind kind,
                const GemmShape& shape) {
  const GemmGrid* grid = kind == KernelKind::kNorm              ? &gpu.norm_grid
                         : kind == KernelKind::kNormBackward    ? &gpu.norm_backward_grid
                         : kind == KernelKind::kSoftmax         ? &gpu.softmax_grid
                         : kind == KernelKind::kSoftmaxBackward ? &gpu.softmax_backward_grid
                                                                : nullptr;
  // Autocast runs layer norm and softmax in fp32 (its fp32 list), and tf32
  // is a product's: their measured rates hold at every precision.
  if (grid == nullptr || !shape.known() || grid->empty()) return 0;
  return grid->Rate(shape);
}

bool StreamsState(const GpuSpec& gpu, double state_bytes) {
  return gpu.cache_bytes > 0 && state_bytes > gpu.cache_bytes;
}

GpuKernelTally::GpuKernelTally(const GpuSpec& gpu, GpuPrecision precision, GpuLaunch launch,
                               StreamedReads streamed)
    : gpu_(gpu),
      precision_(precision),
      graph_(launch == GpuLaunch::kGraph),
      python_(launch == GpuLaunch::kPythonEager),
      streamed_(streamed) {
  compute_ = PeakFlops(gpu, precision) * gpu.compute_share;
  if (!graph_) {
    host_s_ = gpu.dispatch_s + (launch == GpuLaunch::kPythonEager ? gpu.python_op_s : 0);
  }
}

void GpuKernelTally::Add(double flops, double bytes, double count, KernelKind kind,
                         const GemmShape& shape) {
  const bool in_place = kind == KernelKind::kElementwiseInPlace;
  const bool gemm = kind == KernelKind::kGemm || kind == KernelKind::kBatchedGemm;
  const bool product =
      gemm || kind == KernelKind::kAttention || kind == KernelKind::kAttentionBackward;
  const double attention = AttentionRate(gpu_, precision_, kind, shape);
  // A measured layer norm's rate holds its traffic too (elements a second).
  const double norm = NormRate(gpu_, precision_, kind, shape);
  // What moves through memory where no such rate is measured.
  const double traffic = norm > 0 ? bytes : RecordedTraffic(kind, shape, bytes);
  // The GEMM grid is read at a GEMM's shape only (attention's is another).
  const bool batched = kind == KernelKind::kBatchedGemm;
  const double batched_s =
      batched ? BatchedGridS(gpu_, precision_, flops, shape, streamed_.products) : 0;
  // Without that grid, an fp32 batch does the work of its tiles (the
  // tiles are the fp32 kernels'; other precisions run other kernels).
  const double tiled_flops = batched && batched_s <= 0 && precision_ == GpuPrecision::kFp32
                                 ? BatchedTileFlops(gpu_, flops, shape)
                                 : 0;
  const double work_flops = tiled_flops > 0 ? tiled_flops : flops;
  // A batch the batched grid priced needs no rate of its own.
  const bool rated = product && batched_s <= 0;
  const GemmShape gemm_shape = !gemm ? GemmShape() : batched ? AsOneProduct(flops, shape) : shape;
  const ProductRate product_rate = attention > 0 ? ProductRate{attention, true}
                                   : rated       ? RateOfProduct(gpu_, precision_, flops, bytes,
                                                                 gemm_shape, streamed_.products, batched)
                                                 : ProductRate{compute_, false};
  const double rate = product_rate.flops_per_s;
  // A measured product's rate holds its own traffic; a batch's products
  // each read operands of their own (activations, never the model's
  // streamed state), which the batch moves at the element-wise bandwidth.
  const double memory_s =
      product_rate.measured && !batched
          ? 0
          : traffic / MemoryRate(gpu_, traffic, streamed_.elementwise && !batched, in_place);
  const double call_s = attention <= 0                           ? 0
                        : kind == KernelKind::kAttentionBackward ? gpu_.attention_backward_call_s
                                                                 : gpu_.attention_call_s;
  // A measured row kernel's grid holds rows read once (the calibration's
  // widths are a warp's); a softmax row read three times moves twice that.
  const double work_s =
      norm > 0        ? RowPasses(kind, shape, bytes) * double(shape.m) * double(shape.n) / norm
      : batched_s > 0 ? batched_s
                      : std::max(work_flops / rate, memory_s) + call_s;
  double t = 0;
  if (graph_) {
    t = std::max(gpu_.min_kernel_s, work_s) + gpu_.graph_node_s;
  } else if (gpu_.synchronous) {
    t = host_s_ + work_s;
  } else {
    t = std::max(host_s_, std::max(gpu_.min_kernel_s, work_s));
  }
  cost_.kernels += int64_t(count);
  cost_.time_s += t * count;
  host_total_s_ += host_s_ * count;
  // The energy above stepping power goes with a kernel's work, not its
  // time: its roofline time at the achieved shares of peak, what a board
  // at load power would take. A kernel that a measured table says takes
  // longer (a small one, latency-bound) holds the GPU longer without
  // drawing load power meanwhile: on an H200 (2026-11-27) the wind
  // preset's whole-step graph of small kernels drew 159 W as it replayed
  // (0.69 J in 4.33 ms), a large GEMM 667 W. Where no table is measured
  // this is work_s.
  const double full_rate_s =
      std::max(work_flops / compute_, traffic / (gpu_.memory_bw * gpu_.memory_share));
  loaded_s_ += std::min(work_s, full_rate_s) * count;
  cost_.flops += flops * count;
  cost_.bytes += bytes * count;
  if (!graph_ && host_s_ > work_s) {
    cost_.launch_bound_kernels += int64_t(count);
    cost_.launch_bound_s += t * count;
  }
}

void GpuKernelTally::AddHostCalls(const HostCalls& calls) {
  if (graph_) return;
  // Python's layer is the call's, whether or not the op launches a
  // kernel: pytorch#41383's figure is an op's call from Python.
  const double op_s = gpu_.host_op_s + (python_ ? gpu_.python_op_s : 0);
  const double s = op_s * std::max(calls.ops, 0.0) +
                   gpu_.frame_s * std::max(calls.frames, 0.0) +
                   gpu_.history_s * std::max(calls.history, 0.0) +
                   gpu_.node_s * std::max(calls.nodes, 0.0);
  if (s <= 0) return;
  host_total_s_ += s;
  if (gpu_.synchronous) cost_.time_s += s;
}

GpuStepCost GpuKernelTally::Finish(double extra_s) const {
  GpuStepCost c = cost_;
  // A host slower than the kernels it launches sets the step's time: the
  // GPU waits for it beyond the launch-bound kernels' own time too.
  if (!gpu_.synchronous && host_total_s_ > c.time_s) {
    c.launch_bound_s += host_total_s_ - c.time_s;
    c.time_s = host_total_s_;
  }
  c.time_s += extra_s;
  const double stepping_w = gpu_.stepping_power_w();
  c.energy_j = stepping_w * c.time_s + std::max(0.0, gpu_.load_power_w - stepping_w) * loaded_s_;
  return c;
}

GpuStepCost CostKernels(const GpuSpec& gpu, GpuPrecision precision,
                        const std::vector<GpuKernel>& kernels, GpuLaunch launch) {
  GpuKernelTally tally(gpu, precision, launch);
  HostCalls host;
  for (const GpuKernel& k : kernels) {
    host.frames += double(k.frames);
    host.history += double(k.history);
    host.nodes += double(k.nodes);
    if (LaunchesNoKernel(k.op)) {
      ++host.ops;
    } else {
      tally.Add(k.flops, k.bytes, 1, KernelKindOf(k.op), k.shape);
    }
  }
  if (launch != GpuLaunch::kGraph) tally.AddHostCalls(host);
  return tally.Finish(launch == GpuLaunch::kGraph ? gpu.dispatch_s : 0);
}

double DeviceSeconds(const GpuSpec& gpu, GpuPrecision precision,
                     const std::vector<GpuKernel>& kernels) {
  GpuSpec device_only = gpu;
  device_only.dispatch_s = 0;
  device_only.graph_node_s = 0;
  return CostKernels(device_only, precision, kernels, GpuLaunch::kGraph).time_s;
}

double IdleCallSeconds(const GpuSpec& gpu, GpuPrecision precision,
                       const std::vector<GpuKernel>& kernels) {
  double to_first_s = gpu.python_op_s, host_s = gpu.python_op_s;
  bool launched = false;
  for (const GpuKernel& k : kernels) {
    const bool view = LaunchesNoKernel(k.op);
    const double s = view ? gpu.host_op_s : gpu.dispatch_s;
    host_s += s;
    if (!launched) to_first_s += s;
    launched = launched || !view;
  }
  return std::max(host_s, to_first_s + DeviceSeconds(gpu, precision, kernels));
}

}  // namespace hpt
