#include "workers/calibrate/device_calibration.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/gpu/kernel_cost.h"
#include "workers/calibrate/attention_calibration.h"
#include "workers/calibrate/batched_calibration.h"
#include "workers/calibrate/best_time.h"
#include "workers/calibrate/cache_size.h"
#include "workers/calibrate/calibration_shapes.h"
#include "workers/calibrate/host_calibration.h"
#include "workers/calibrate/memory_calibration.h"
#include "workers/calibrate/norm_calibration.h"
#include "workers/gpu/cuda_timing.h"
#include "workers/gpu/nccl_group.h"
#include "workers/gpu/nvml_energy.h"

namespace hpt {
namespace {

using Clock = std::chrono::steady_clock;
using Say = std::function<void(const std::string&)>;

// Seconds of the empty ops every table is net of.
struct EmptyOpS {
  double product_s = 0, elementwise_s = 0;
};

// A product the progress lines quote: a wind-preset step's query-key-value
// projection at batch 1 (57 tokens, d_model 512, three 512-wide outputs).
constexpr GemmShape kWindProjection{57, 1536, 512};  // m, n, k
// Its weight gradient's product (g^T x), in its layout.
constexpr GemmShape kWindWeightGradient{512, 1536, 57, /*a_transposed=*/true};

// Seconds of a 1 x 1 product: its dispatch, with no work to speak of.
// On CUDA, none: the tables there hold kernels' device time, replayed as a
// graph (DeviceBestS), which a kernel takes whole, however small; the
// host's launch is measured apart (MeasureHostCosts) and the cost model takes
// the larger of the two.
double EmptyProductS(const torch::Device& device) {
  if (device.is_cuda()) return 0;
  torch::NoGradGuard no_grad;
  auto opts = torch::TensorOptions().device(device);
  torch::Tensor a1 = torch::randn({1, 1}, opts), b1 = torch::randn({1, 1}, opts);
  return BestS(device, 9, [&] {
    for (int i = 0; i < 100; ++i) torch::mm(a1, b1);
  }) / 100;
}

// Achieved rates of products over transformer-like shapes, by size,
// beyond `empty_s` (EmptyProductS). `cap->best` becomes the best rate of
// those whose marginal time is at least half their whole time (the larger
// ones: timed well apart from a call's cost), and every rate is held to it.
std::vector<std::pair<double, double>> GemmRates(const torch::Device& device, bool quick,
                                                 double empty_s, RateCap* cap) {
  torch::NoGradGuard no_grad;
  auto opts = torch::TensorOptions().device(device);
  std::vector<double> sizes;
  std::vector<std::pair<double, double>> timed;  // (FLOPs, s)
  const std::vector<int64_t> ms = GemmRateRows(quick), ns = GemmRateWidths(quick);
  for (int64_t m : ms) {
    for (int64_t n : ns) {
      torch::Tensor a = torch::randn({m, n}, opts), b = torch::randn({n, n}, opts);
      const double flops = 2.0 * double(m) * double(n) * double(n);
      const double bytes = 4.0 * double(2 * m * n + n * n);  // a, b and the result
      const int reps = int(std::clamp(2e9 / flops, 1.0, 200.0));
      const double s = DeviceBestS(device, quick ? 3 : 5, [&] {
        for (int i = 0; i < reps; ++i) torch::mm(a, b);
      }) / reps;
      sizes.push_back(GemmSize(flops, bytes));
      timed.push_back({flops, s});
    }
  }
  *cap = ResolvedCap(timed, empty_s);
  std::vector<std::pair<double, double>> rates;
  for (size_t i = 0; i < timed.size(); ++i) {
    rates.push_back({sizes[i], cap->Rate(timed[i].first, timed[i].second - empty_s)});
  }
  std::sort(rates.begin(), rates.end());
  // One rate a size: shapes of equal size average.
  std::vector<std::pair<double, double>> merged;
  for (const auto& r : rates) {
    if (!merged.empty() && merged.back().first == r.first) {
      merged.back().second = 0.5 * (merged.back().second + r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

// The best rate of bf16 products (square, large: what the units reach),
// the peak a bf16 (autocast) product's work is done at (AtPrecision in
// devices/gpu/kernel_cost.cc); the tables keep their fp32 rates.
double Bf16Flops(const torch::Device& device, bool quick) {
  torch::NoGradGuard no_grad;
  auto opts = torch::TensorOptions().device(device).dtype(torch::kBFloat16);
  const std::vector<int64_t> sizes = Bf16Sizes(quick, device.is_cuda());
  double best = 0;
  for (int64_t n : sizes) {
    torch::Tensor a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts);
    const double flops = 2.0 * double(n) * double(n) * double(n);
    // On a GPU a timed run repeats the product to about 2e10 FLOPs, so a
    // launch's cost does not show. On a CPU one product takes
    // milliseconds at the least (a 512^3 one at 100 GFLOP/s: 2.7 ms),
    // long enough to time alone; without bf16 units (a 2-core EPYC with
    // AVX2 alone did 1.2 GFLOP/s, 2026-11-30) 2e10 FLOPs a run took 17 s,
    // and the quick calibration spent 80 s here.
    const int reps = device.is_cuda() ? int(std::clamp(2e10 / flops, 1.0, 50.0)) : 1;
    const double s = DeviceBestS(device, quick ? 3 : 5, [&] {
      for (int i = 0; i < reps; ++i) torch::mm(a, b);
    }) / reps;
    best = std::max(best, flops / s);
  }
  return best;
}

// Which part of a product a streamed grid takes from a pool no cache
// holds: the second operand (a linear layer's weight, in its forward and
// its input gradient) or the result (its weight gradient).
enum class StreamedPart { kSecondOperand, kResult };

// Achieved rates of products over a grid of shapes, beyond `empty_s`;
// `streamed`: each repetition reads (or writes) another `part` of the
// pool; `layout`: which operand is stored transposed (a transposed second
// operand is never streamed). A product otherwise writes a new result, as
// a step's does.
//
// On a CPU each core's cache is its own. A step's product reads an
// activation (or a gradient) that the op before it has just written, and
// that op split its rows between the threads otherwise than the product
// splits them, so part of the operand comes from the other core's cache.
// A product timed back to back on one operand never pays that. So, on a
// CPU, each repetition first rewrites the first operand with an
// element-wise op (ScaleOnce, in place) and the write's own time, timed
// alone, is taken out. On the Intel Xeon VM a 1024 x 32 x 32
// product took 9.4 us back to back and 28.0 us after an element-wise op
// wrote its first operand; products chained on each other's results, 9.5
// (2 threads; with 1 thread 13.7 and 16.1).
GemmGrid MeasureGemmGrid(const torch::Device& device, bool quick, double empty_s, RateCap* cap,
                         StreamPool* streamed, GemmShape layout = GemmShape(),
                         StreamedPart part = StreamedPart::kSecondOperand) {
  StreamPool* streamed_b = part == StreamedPart::kSecondOperand ? streamed : nullptr;
  StreamPool* streamed_c = part == StreamedPart::kResult ? streamed : nullptr;
  const bool hand_over = !device.is_cuda();
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> axis = GemmGridAxis(quick);
  const auto opts = torch::TensorOptions().device(device);
  const int runs = quick ? 3 : 5;
  std::vector<std::pair<double, double>> timed;  // (FLOPs, s), in the grid's order
  for (int64_t m : axis) {
    for (int64_t k : axis) {
      torch::Tensor a = layout.a_transposed ? torch::randn({k, m}, opts).t()
                                            : torch::randn({m, k}, opts);
      // The hand-over's write of the first operand, alone: one per m x k,
      // repeated as MemoryRates repeats an op of its bytes.
      const int write_reps = int(std::clamp(2e8 / (8.0 * double(m) * double(k)), 1.0, 100.0));
      const double write_s =
          hand_over ? BestS(device, runs, [&] {
            for (int i = 0; i < write_reps; ++i) ScaleOnce(a, a, /*in_place=*/true, i);
          }) / write_reps
                    : 0;
      for (int64_t n : axis) {
        const std::vector<torch::Tensor> b = layout.b_transposed
                                                 ? std::vector{torch::randn({n, k}, opts).t()}
                                                 : Operands(device, {k, n}, streamed_b);
        std::vector<torch::Tensor> c;
        if (streamed_c != nullptr) c = streamed_c->Operands({m, n});
        const double flops = 2.0 * double(m) * double(k) * double(n);
        const int reps = int(std::clamp(1e8 / flops, 1.0, 100.0));
        size_t next = 0;  // as in MemoryRates: each run reads operands the last did not
        const double s = DeviceBestS(device, runs, [&] {
          for (int i = 0; i < reps; ++i, ++next) {
            if (hand_over) ScaleOnce(a, a, /*in_place=*/true, i);
            if (c.empty()) {
              torch::mm(a, b[next % b.size()]);
            } else {
              torch::mm_out(c[next % c.size()], a, b[next % b.size()]);
            }
          }
        }) / reps - write_s;
        if (streamed_b != nullptr) streamed_b->ReadUpTo(b[next % b.size()]);
        if (streamed_c != nullptr) streamed_c->ReadUpTo(c[next % c.size()]);
        timed.push_back({flops, s});
      }
    }
  }
  return *GemmGrid::Make(axis, axis, axis, RatesHeldTo(timed, empty_s, cap));
}

// Mean board power while `body` repeats for `window_s`.
template <typename F>
double PowerW(const NvmlEnergy& nvml, const torch::Device& device, double window_s, F body) {
  torch::cuda::synchronize(device.index());
  const double j0 = nvml.TotalJ();
  const Clock::time_point start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < window_s) body();
  torch::cuda::synchronize(device.index());
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return (nvml.TotalJ() - j0) / s;
}

absl::Status MeasurePower(const torch::Device& device, const CalibrationOptions& o,
                          GpuSpec* g) {
  // By the board's UUID: CUDA_VISIBLE_DEVICES renumbers CUDA's indices,
  // not NVML's, so an index may name another board.
  std::string uuid;
  try {
    uuid = CudaDeviceUuid(device.index());
  } catch (const c10::Error& e) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read the GPU's UUID: ", e.what_without_backtrace()));
  }
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml = NvmlEnergy::Open(uuid, device.index());
  if (!nvml.ok()) return nvml.status();
  g->name = (*nvml)->name();
  const double w = o.power_window_s;
  g->idle_power_w = PowerW(**nvml, device, w, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  torch::Tensor x = torch::ones({4}, torch::TensorOptions().device(device).requires_grad(true));
  g->active_power_w = PowerW(**nvml, device, w, [&] { x.mul(1.0001).add(1e-4).sum(); });
  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::randn({8192, 8192}, torch::TensorOptions().device(device));
  g->load_power_w = PowerW(**nvml, device, w, [&] { torch::mm(a, a); });
  return absl::OkStatus();
}

}  // namespace

namespace {

// The last-level cache a profile's streamed rates and state rule use:
// CUDA's L2 size, or the CPU's as sysfs and the bandwidth curve have it.
absl::StatusOr<double> CacheBytes(const torch::Device& device,
                                  const std::vector<std::pair<double, double>>& memory_rates,
                                  const Say& say) {
  if (device.is_cuda()) {
    absl::StatusOr<double> l2 = CudaL2CacheBytes(device.index());
    if (l2.ok()) say(absl::StrFormat("last-level cache       %.0f MB (CUDA L2)", 1e-6 * *l2));
    return l2;
  }
  const std::map<int, double> caches = CpuCaches();
  const double last = caches.empty() ? 0 : caches.rbegin()->second;
  const double next = caches.size() < 2 ? 0 : std::prev(caches.end(), 2)->second;
  const double effective = EffectiveCacheBytes(memory_rates, last, next);
  if (effective <= 0) {
    say("last-level cache       unknown: no streamed rates");
  } else if (effective < last) {
    say(absl::StrFormat("last-level cache       %.0f MB as measured (sysfs says %.0f MB)",
                        1e-6 * effective, 1e-6 * last));
  } else {
    say(absl::StrFormat("last-level cache       %.0f MB (sysfs)", 1e-6 * effective));
  }
  return effective;
}

// `name` as a LibTorch device; CUDA's index filled in.
absl::StatusOr<torch::Device> CalibratedDevice(const std::string& name) {
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(name);
  } catch (const std::exception&) {
    return absl::InvalidArgumentError(absl::StrCat("device '", name, "' is not cpu or cuda:N"));
  }
  if (device.is_cuda() && !torch::cuda::is_available()) {
    return absl::FailedPreconditionError(absl::StrCat("device ", name, ": no CUDA here"));
  }
  if (device.is_cuda() && !device.has_index()) device = torch::Device(torch::kCUDA, 0);
  return device;
}

// `host` into the profile, and its progress line, `note` at its end.
void SetHost(const HostCosts& host, const std::string& note, GpuSpec* g, const Say& say) {
  g->dispatch_s = host.dispatch_s;
  g->host_op_s = host.host_op_s;
  g->history_s = host.history_s;
  g->frame_s = host.frame_s;
  g->node_s = host.node_s;
  say(absl::StrFormat("host per op            %.2f us (%.2f us a view), +%.2f us recording "
                      "autograd history, %.2f us a frame, %.2f us a backward node%s",
                      1e6 * g->dispatch_s, 1e6 * g->host_op_s, 1e6 * g->history_s,
                      1e6 * g->frame_s, 1e6 * g->node_s, note));
}

// " (N at it: ...)" where `cap` held rates to its best.
std::string AtBest(const RateCap& cap) {
  if (cap.capped == 0) return "";
  return absl::StrFormat(" (%d at it: too short to time apart from an empty product)",
                         cap.capped);
}

// GEMM rates by size; bandwidths, out of place and in place; the cache.
absl::Status MeasureSizes(const torch::Device& device, bool quick, const EmptyOpS& empty,
                          GpuSpec* g, const Say& say) {
  RateCap cap;
  g->gemm_rates = GemmRates(device, quick, empty.product_s, &cap);
  g->fp32_flops = cap.best;  // every fp32 table below is held to it
  say(absl::StrFormat("GEMM rates             %zu sizes, best %.1f GFLOP/s%s",
                      g->gemm_rates.size(), 1e-9 * g->fp32_flops, AtBest(cap)));
  g->bf16_flops = Bf16Flops(device, quick);
  say(absl::StrFormat("bf16 products          best %.1f GFLOP/s", 1e-9 * g->bf16_flops));
  g->memory_rates = MemoryRates(device, quick, empty.elementwise_s, nullptr);
  g->memory_bw = g->memory_rates.back().second;
  say(absl::StrFormat("memory bandwidth       %.1f GB/s at %.0f MB (%zu sizes)",
                      1e-9 * g->memory_bw, 1e-6 * g->memory_rates.back().first,
                      g->memory_rates.size()));
  g->memory_rates_inplace =
      MemoryRates(device, quick, EmptyElementwiseS(device, /*in_place=*/true), nullptr,
                  /*in_place=*/true);
  say(absl::StrFormat("in place               %.1f GB/s at %.0f MB",
                      1e-9 * g->memory_rates_inplace.back().second,
                      1e-6 * g->memory_rates_inplace.back().first));
  absl::StatusOr<double> cache = CacheBytes(device, g->memory_rates, say);
  if (!cache.ok()) return cache.status();
  g->cache_bytes = *cache;
  return absl::OkStatus();
}

// Products and element-wise work with their operands streamed from memory.
void MeasureStreamed(const torch::Device& device, bool quick, const EmptyOpS& empty,
                     const GemmShape& tn, GpuSpec* g, const Say& say) {
  StreamPool pool(device, g->cache_bytes);
  RateCap products{g->fp32_flops};
  g->memory_rates_streamed = MemoryRates(device, quick, empty.elementwise_s, &pool);
  g->gemm_grid_streamed = MeasureGemmGrid(device, quick, empty.product_s, &products, &pool);
  g->gemm_grid_streamed_result = MeasureGemmGrid(device, quick, empty.product_s, &products,
                                                 &pool, tn, StreamedPart::kResult);
  g->fp32_flops = products.best;
  say(absl::StrFormat("streamed from memory   %.1f GFLOP/s at 57x512x1536, %.1f GB/s at 1 MB, "
                      "%.1f GFLOP/s at 512x1536x57 (its gradient)%s",
                      1e-9 * g->gemm_grid_streamed.Rate(kWindProjection),
                      1e-9 * MemoryRate(*g, 1 << 20, true),
                      1e-9 * g->gemm_grid_streamed_result.Rate(kWindWeightGradient),
                      AtBest(products)));
}

// Layer norm and softmax by rows and width.
void MeasureRowKernels(const torch::Device& device, bool quick, const EmptyOpS& empty, GpuSpec* g,
                       const Say& say) {
  const RowGrids norm = MeasureLayerNorm(device, quick, empty.elementwise_s);
  g->norm_grid = norm.forward;
  g->norm_backward_grid = norm.backward;
  const RowGrids softmax = MeasureSoftmax(device, quick, empty.elementwise_s);
  g->softmax_grid = softmax.forward;
  g->softmax_backward_grid = softmax.backward;
  for (const auto& [what, grids] :
       {std::pair{"layer norm", &norm}, std::pair{"softmax", &softmax}}) {
    say(absl::StrFormat(
        "%-22s %.2f ns an element forward, %.2f backward (1024 rows of 32); "
        "%.2f, %.2f (57 of 512)",
        what, 1e9 / grids->forward.Rate({1024, 32, 1}), 1e9 / grids->backward.Rate({1024, 32, 1}),
        1e9 / grids->forward.Rate({57, 512, 1}), 1e9 / grids->backward.Rate({57, 512, 1})));
  }
}

// Products by shape and layout, attention, layer norm; from memory, where
// a cache is known.
void MeasureShapes(const torch::Device& device, bool quick, const EmptyOpS& empty, GpuSpec* g,
                   const Say& say) {
  RateCap products{g->fp32_flops};
  g->gemm_grid = MeasureGemmGrid(device, quick, empty.product_s, &products, nullptr);
  GemmShape nt, tn;
  nt.b_transposed = true;
  tn.a_transposed = true;
  g->gemm_grid_nt = MeasureGemmGrid(device, quick, empty.product_s, &products, nullptr, nt);
  g->gemm_grid_tn = MeasureGemmGrid(device, quick, empty.product_s, &products, nullptr, tn);
  g->gemm_grid_batched = MeasureBatchedGrid(device, quick, empty.product_s, &products);
  g->fp32_flops = products.best;  // the best product rate measured: every fp32 table's bound
  say(absl::StrFormat(
      "batched products       %.1f GFLOP/s at 12x16x12 a product, %.1f at "
      "57x64x57 (%zu^3 shapes)",
      1e-9 * g->gemm_grid_batched.Rate({12, 12, 16}),
      1e-9 * g->gemm_grid_batched.Rate({57, 57, 64}), g->gemm_grid_batched.m().size()));
  RateCap heads{g->fp32_flops};
  const AttentionProfile attention = MeasureAttention(device, quick, empty.product_s, &heads);
  g->attention_grid = attention.forward;
  g->attention_backward_grid = attention.backward;
  g->attention_call_s = attention.forward_call_s;
  g->attention_backward_call_s = attention.backward_call_s;
  MeasureRowKernels(device, quick, empty, g, say);
  say(absl::StrFormat("fused attention        forward %.1f GFLOP/s + %.1f us a call, backward "
                      "%.1f GFLOP/s + %.1f us (16 x 16 x 8 a head)%s",
                      1e-9 * g->attention_grid.Rate({16, 16, 8}), 1e6 * g->attention_call_s,
                      1e-9 * g->attention_backward_grid.Rate({16, 16, 8}),
                      1e6 * g->attention_backward_call_s, AtBest(heads)));
  GemmShape projection = kWindProjection;
  projection.b_transposed = true;
  say(absl::StrFormat("GEMM shapes            %zu^3 by layout, %.1f GFLOP/s at 57x512x1536 (x W^T "
                      "%.1f)%s",
                      g->gemm_grid.m().size(), 1e-9 * g->gemm_grid.Rate(kWindProjection),
                      1e-9 * g->gemm_grid_nt.Rate(projection), AtBest(products)));
  if (g->cache_bytes > 0) MeasureStreamed(device, quick, empty, tn, g, say);
}

// CUDA's own: a graph node's cost, and power where NVML answers.
absl::Status MeasureGraphAndPower(const torch::Device& device, const CalibrationOptions& o,
                                  GpuSpec* g, const Say& say) {
  absl::StatusOr<double> node = CudaGraphNodeS(device.index());
  if (!node.ok()) return node.status();
  g->min_kernel_s = *node;  // a node's cost folded into the shortest kernel's
  say(absl::StrFormat("graph node (tiny add)  %.2f us", 1e6 * g->min_kernel_s));
  // The tables above are kernels' device time, each body replayed as a
  // graph; one that would not capture was timed from the host instead.
  if (const int failed = CudaGraphCaptureFailures(); failed > 0) {
    say(absl::StrFormat("graph-timed tables     %d bodies would not capture: host-timed", failed));
  }
  if (absl::Status s = MeasurePower(device, o, g); !s.ok()) {
    say(absl::StrCat("power                  not measured: ", s.message()));
  } else {
    say(absl::StrFormat("power                  idle %.0f W, stepping %.0f W, GEMM %.0f W",
                        g->idle_power_w, g->active_power_w, g->load_power_w));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GpuSpec> CalibrateDevice(const CalibrationOptions& o) {
  absl::StatusOr<torch::Device> device = CalibratedDevice(o.device);
  if (!device.ok()) return device.status();
  const Say say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  GpuSpec g;
  g.name = device->str();
  g.synchronous = device->is_cpu();
  g.python_op_s = kPythonOpS;
  g.compute_share = g.memory_share = 1;  // the rates below are achieved ones
  const int host_ops = o.quick ? 4000 : 40000;
  const HostCosts start = MeasureHostCosts(*device, host_ops);
  SetHost(start, "", &g, say);
  // Every product table is net of one measurement of an empty product,
  // every bandwidth table of one of an empty element-wise op.
  const EmptyOpS empty{EmptyProductS(*device), EmptyElementwiseS(*device, /*in_place=*/false)};
  if (absl::Status s = MeasureSizes(*device, o.quick, empty, &g, say); !s.ok()) return s;
  MeasureShapes(*device, o.quick, empty, &g, say);
  // The host again, seconds after the start; the less disturbed set is
  // kept (LessDisturbed).
  const HostCosts end = MeasureHostCosts(*device, host_ops);
  SetHost(LessDisturbed(start, end),
          absl::StrFormat(" (the lesser of %.2f and %.2f us an op, at the start and the end)",
                          1e6 * start.dispatch_s, 1e6 * end.dispatch_s),
          &g, say);
  if (device->is_cuda()) {
    if (absl::Status s = MeasureGraphAndPower(*device, o, &g, say); !s.ok()) return s;
  }
  g.source = absl::StrCat("hpt_calibrate on ", g.name, " (", device->str(), "), LibTorch ",
                          TORCH_VERSION, "; python_op_s cited (pytorch#41383)");
  return g;
}

}  // namespace hpt
