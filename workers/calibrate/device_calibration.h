// Calibration: a device's own cost profile (devices/gpu/roofline.h),
// measured with microbenchmarks on the device LibTorch runs on, never
// fitted to whole training steps (those are what the profile is checked
// against). It measures:
//   dispatch_s     host time per op: a cycle of small element-wise ops,
//                  issued back to back;
//   history_s      what an op adds when it records autograd history: the
//                  same cycle on a tensor that needs gradients, less
//                  dispatch_s;
//   frame_s        host time per dispatcher frame that launches nothing:
//                  a cycle of transposes;
//   node_s         the backward engine's time per node beyond its kernel:
//                  the backward of a chain of relus, less dispatch_s;
//   cache_bytes    the last-level cache: CUDA's L2 size; on a CPU, sysfs's
//                  last level, or less where the measured bandwidth falls
//                  off sooner (EffectiveCacheBytes);
//   gemm_rates     achieved FLOP/s of products [m x k] x [k x n] over the
//                  sizes a spatio-temporal transformer runs, beyond the
//                  dispatch of an empty product;
//   bf16_flops     the best achieved rate of large bf16 products (the
//                  tables are fp32's; the cost model does a bf16 product's
//                  work at this rate);
//   gemm_grid      the same over a grid of shapes, every m, k and n from
//                  8 to 2048 (devices/gpu/gemm_grid.h), and again with the
//                  second operand stored transposed (gemm_grid_nt: x W^T)
//                  and with the first (gemm_grid_tn: g^T x); on a CPU
//                  with the first operand just rewritten by an
//                  element-wise op, as in a step (its time taken out);
//   memory_rates   achieved bandwidth of an element-wise op by size;
//   memory_rates_inplace  the same of an op that writes its operand in
//                  place (to 34 MB moved when quick);
//   *_streamed     the grid and the memory rates again, each repetition
//                  reading its operand from a pool over twice the cache
//                  (what a step whose model state outgrows the cache does);
//   attention_*    fused attention's rates by query length, key length and
//                  head dimension (the slope between 8 and 64 heads) and
//                  its fixed cost a call (the intercept), forward and
//                  backward;
//   gemm_grid_batched  a batch of products (bmm) by one product's m, k
//                  and n, 8 to 1024, each batch large enough to fill the
//                  device (calibration_shapes.h);
//   norm_grid      layer norm's elements a second by rows and width,
//                  forward and backward (norm_backward_grid);
//   softmax_grid   the same of softmax (softmax_backward_grid);
//   min_kernel_s   (CUDA) a graph node of a one-element add, replayed;
//   power          (CUDA, NVML) board power idle, stepping small ops, and
//                  running large GEMMs.
// python_op_s cannot be measured from C++: it stays the cited figure.
//
//   CalibrationOptions o; o.device = "cuda:0";
//   ASSIGN_OR_RETURN(GpuSpec profile, CalibrateDevice(o));
//   std::string text = GpuProfileText(profile);   // reference_gpu=FILE
#ifndef HPT_WORKERS_DEVICE_CALIBRATION_H_
#define HPT_WORKERS_DEVICE_CALIBRATION_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/gpu/roofline.h"

namespace hpt {

struct CalibrationOptions {
  std::string device = "cpu";  // cpu, cuda, cuda:N
  // Fewer sizes and shorter loops (seconds, not a minute): for tests.
  bool quick = false;
  double power_window_s = 2;  // each power reading (CUDA)
  std::function<void(const std::string&)> progress;  // one line per stage
};

absl::StatusOr<GpuSpec> CalibrateDevice(const CalibrationOptions& options);

}  // namespace hpt

#endif  // HPT_WORKERS_DEVICE_CALIBRATION_H_
