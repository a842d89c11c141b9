// GPU cost of the kernels a LibTorch step really ran, on a reference GPU
// profile (devices/gpu/roofline.h). A kernel's device time is the largest
// of the profile's shortest kernel, its FLOPs at the achieved rate (for
// products the measured rates by shape, else by size: GemmRate,
// AttentionRate), its bytes at the achieved bandwidth, or a layer norm's
// or a softmax's elements at its measured rate (NormRate). How it reaches
// the device is the launch path's:
//   eager    the host dispatches each op (dispatch_s, plus python_op_s for
//            ops called from Python, views among them) while the GPU runs
//            the previous ones:
//            an op costs the larger of its dispatch and its device time;
//            on a synchronous device (a CPU) the sum of the two;
//   graph    a CUDA graph replays the kernels: each costs its device time
//            plus a graph node's (graph_node_s); the one launch is the
//            caller's (Finish's extra_s).
// Energy: the board's stepping power (active_power_w, else idle) over the
// whole time, plus the rest of its load power over the time kernels work.
//
//   std::vector<GpuKernel> kernels = recorder.Finish();   // workers/
//   GpuStepCost c = CostKernels(*GpuPreset("h100"), GpuPrecision::kFp32, kernels);
//   // c.time_s, c.kernels, c.launch_bound_share()
#ifndef HPT_DEVICES_GPU_KERNEL_COST_H_
#define HPT_DEVICES_GPU_KERNEL_COST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devices/gpu/roofline.h"

namespace hpt {

// One ATen op that launches a kernel, with its work.
struct GpuKernel {
  GpuKernel(std::string op = "", double flops = 0, double bytes = 0, GemmShape shape = {})
      : op(std::move(op)), flops(flops), bytes(bytes), shape(shape) {}
  std::string op;    // "aten::addmm"
  double flops = 0;
  double bytes = 0;  // operands read and results written
  GemmShape shape;   // a product's (one of a batch's; attention: Lq, Lk, head dim)
  // Dispatcher frames the host ran before it that launch nothing and are
  // no entry of their own (a view inside an op, a composite's own frame):
  // host time only (GpuSpec::frame_s).
  int64_t frames = 0;
  // Of it and those frames, how many record autograd history
  // (GpuSpec::history_s each).
  int64_t history = 0;
  // Autograd nodes the backward engine ran before it (GpuSpec::node_s).
  int64_t nodes = 0;
};

// A task's host work beyond its kernels' dispatch: ops that launch no
// kernel (host_op_s each, plus python_op_s where the program calls them
// from Python), further dispatcher frames (frame_s), ops and frames that
// record autograd history (history_s) and the backward engine's nodes
// (node_s).
struct HostCalls {
  double ops = 0, frames = 0, history = 0, nodes = 0;
};

enum class GpuLaunch { kEager, kPythonEager, kGraph };

// How a kernel's work is rated: element-wise at the memory rate (in place,
// ATen's trailing underscore, at the in-place rate where measured), a GEMM
// at the measured GEMM rates, fused attention (forward or backward) at the
// measured attention rates.
enum class KernelKind {
  kElementwise,
  kElementwiseInPlace,
  kGemm,
  // A batch of products (bmm, baddbmm: unfused attention's): the batch's
  // work at the measured batched rate of one product's shape
  // (GpuSpec::gemm_grid_batched), and at least one product's own time;
  // without that grid, as the one product whose tiles it runs (B products
  // of m x k x n: B m x k x n), in fp32 the work of its thread blocks'
  // padded tiles in whole waves over the SMs (GpuSpec::batched_tiles),
  // and at least its operands' traffic at the element-wise bandwidth.
  // Its result is an activation or its gradient, never model state, so
  // never a weight gradient.
  kBatchedGemm,
  kAttention,
  kAttentionBackward,
  kNorm,  // layer norm: GpuSpec::norm_grid
  kNormBackward,
  // A softmax over rows: its elements at GpuSpec::softmax_grid's rate
  // (measured on rows read once), without it by its bytes; a row ATen's
  // kernel reads three times (SoftmaxReadsRowOnce: past 9,216 elements and
  // not fitting a block's shared memory) moves twice that.
  kSoftmax,
  kSoftmaxBackward,
};

struct GpuStepCost {
  double time_s = 0;
  double energy_j = 0;
  int64_t kernels = 0;
  int64_t launch_bound_kernels = 0;  // host dispatch above their device time
  // The time those kernels took, and any more the GPU waits for a host
  // slower than its kernels (host calls that launch none).
  double launch_bound_s = 0;
  double flops = 0, bytes = 0;
  double launch_bound_share() const { return time_s > 0 ? launch_bound_s / time_s : 0; }
};

// Which operands come from memory rather than cache when a task's model
// state outgrows the device's cache (GpuSpec's *_streamed rates): the
// weights its products read, and, in an optimizer update, the state its
// element-wise ops read. Other element-wise ops read activations the task
// has just made.
struct StreamedReads {
  bool products = false, elementwise = false;
};

// Adds kernels up into a GpuStepCost on `gpu` at `precision`, launched by
// `launch`; Finish adds the energy. CostKernels and the recorded work's
// costing (devices/work_cost.h) both go through it.
class GpuKernelTally {
 public:
  GpuKernelTally(const GpuSpec& gpu, GpuPrecision precision, GpuLaunch launch,
                 StreamedReads streamed = StreamedReads());
  // `count` kernels of this work, rated as their `kind`; a product's
  // `shape` (for attention: query length, key length, head dimension as
  // m, n, k) picks its measured rate where the profile has one.
  void Add(double flops, double bytes, double count = 1,
           KernelKind kind = KernelKind::kElementwise, const GemmShape& shape = {});
  // Host time only. A synchronous device adds it; an asynchronous one
  // takes the longer of its kernels' time and the host's whole time.
  void AddHostCalls(const HostCalls& calls);
  // `extra_s` of host time beside the kernels (a graph's one launch, a
  // Python call that launches several kernels).
  GpuStepCost Finish(double extra_s = 0) const;
  int64_t kernels() const { return cost_.kernels; }

 private:
  const GpuSpec& gpu_;
  GpuPrecision precision_;
  bool graph_ = false;
  bool python_ = false;  // the program's ops are called from Python
  StreamedReads streamed_;
  double compute_ = 0, host_s_ = 0;
  double host_total_s_ = 0;  // every op's dispatch
  double loaded_s_ = 0;  // kernels' work at the board's full rate (Finish's energy)
  GpuStepCost cost_;
};

// The size a measured GEMM rate is keyed by: the FLOPs of the square
// product (n x n by n x n) whose arithmetic intensity, FLOPs per element
// moved, equals this product's. A square n-product moves 3n^2 elements
// for 2n^3 FLOPs (2n/3 a element), so n = 1.5 x intensity; a skinny
// product (few rows) or a batch of small ones has the intensity, and so
// the size, of a small square one. `bytes`: operands and result, fp32;
// 0: `flops` itself. Never above `flops`.
double GemmSize(double flops, double bytes);
// The achieved rate of a product of `flops` moving `bytes` on `gpu`, in
// this order of preference: its shape on the measured grid (when `streamed`, a
// weight gradient's (layout tn; a tally rates one of a batch otherwise) on
// gemm_grid_streamed_result and any other on gemm_grid_streamed, where
// measured; else the grid of its layout, gemm_grid_nt or gemm_grid_tn,
// where measured, else gemm_grid); its size on the measured GEMM rates,
// interpolated in log-log at GemmSize (held at the ends); peak times
// compute_share. The tables are fp32's: at bf16 or tf32 a measured rate
// keeps its shape's time beyond the table's best rate (what does not
// scale with the arithmetic units) and does the work at the precision's
// peak times compute_share (kernel_cost.cc, AtPrecision).
double GemmRate(const GpuSpec& gpu, GpuPrecision precision, double flops, double bytes = 0,
                const GemmShape& shape = {}, bool streamed = false);
// Fused attention's achieved rate at `shape` (query length, key length,
// head dimension as m, n, k) on the measured attention grids, at
// `precision` as GemmRate takes a product's; 0 where the profile has none
// (then it is rated as a GEMM).
double AttentionRate(const GpuSpec& gpu, GpuPrecision precision, KernelKind kind,
                     const GemmShape& shape);
// A layer norm's or a softmax's achieved elements a second at `shape`
// (rows, normalised width as m, n) on the measured norm or softmax grids,
// at every precision (autocast runs both in fp32); 0 where the profile has
// none (then it is rated as element-wise work by its bytes).
double NormRate(const GpuSpec& gpu, GpuPrecision precision, KernelKind kind,
                const GemmShape& shape);
// The achieved bandwidth of element-wise work moving `bytes`: the measured
// memory rates (the streamed ones when `streamed` and measured, else the
// in-place ones when `in_place` and measured) interpolated the same way,
// or memory_bw times memory_share.
double MemoryRate(const GpuSpec& gpu, double bytes, bool streamed = false,
                  bool in_place = false);
// True when a task whose model keeps `state_bytes` between steps streams
// it from memory on `gpu`: the state is larger than the known cache. A
// model's state is read in turn each step, so a cache smaller than it
// keeps none of it for the next use (least-recently-used eviction of a
// cyclic sweep).
bool StreamsState(const GpuSpec& gpu, double state_bytes);

// Whether ATen's softmax forward reads each row of `width` elements of
// `element_bytes` once (a warp's, a block's registers or its shared memory
// hold it) rather than three times (kernel_cost.cc cites the kernels).
bool SoftmaxReadsRowOnce(int64_t width, double element_bytes);

// True for ATen ops that only make views or read metadata.
bool LaunchesNoKernel(std::string_view op);
// The kind of an ATen op's kernel.
KernelKind KernelKindOf(std::string_view op);

GpuStepCost CostKernels(const GpuSpec& gpu, GpuPrecision precision,
                        const std::vector<GpuKernel>& kernels,
                        GpuLaunch launch = GpuLaunch::kEager);

// The kernels' own device time: each its graph-priced work, with no graph
// node and no launch (what a profiler's kernel durations add up to).
double DeviceSeconds(const GpuSpec& gpu, GpuPrecision precision,
                     const std::vector<GpuKernel>& kernels);

// One call from Python on an idle GPU, timed by CUDA events recorded
// around it (record; call; record; synchronize), as published per-kernel
// sets measure their latencies: the GPU waits for the call's first
// launch, so the host's time up to it (python_op_s once, host_op_s for
// each view before it, dispatch_s) comes before the kernels' device time
// (each its graph-priced work, with no node); later launches overlap the
// kernels before them, and the host's whole time bounds the call.
double IdleCallSeconds(const GpuSpec& gpu, GpuPrecision precision,
                       const std::vector<GpuKernel>& kernels);

}  // namespace hpt

#endif  // HPT_DEVICES_GPU_KERNEL_COST_H_
