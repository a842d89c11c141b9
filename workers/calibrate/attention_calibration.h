// Fused attention's achieved rate (GpuSpec::attention_grid,
// attention_backward_grid) and fixed cost a call, forward and backward, on
// `device`. Part of the calibration (device_calibration.h); includes
// LibTorch.
//
//   RateCap cap{best_product_rate};
//   AttentionProfile a = MeasureAttention(torch::Device(torch::kCPU), true, empty_s, &cap);
//   double flops_per_s = a.forward.Rate(GemmShape{57, 57, 64});  // Lq, Lk, head dim
#ifndef HPT_WORKERS_ATTENTION_CALIBRATION_H_
#define HPT_WORKERS_ATTENTION_CALIBRATION_H_

#include <torch/torch.h>

#include "devices/gpu/gemm_grid.h"
#include "workers/calibrate/best_time.h"

namespace hpt {

struct AttentionProfile {
  GemmGrid forward, backward;  // FLOPs a second; m query, n key length, k head dim
  double forward_call_s = 0, backward_call_s = 0;
};

// Fused attention (at::scaled_dot_product_attention, inputs that need
// gradients, as in training), forward and backward (a forward-and-backward
// less the forward): over query lengths, key lengths and head dimensions,
// each timed for 8 and for 64 heads in all, so that the rate is the
// slope per head and the fixed cost of a call (its threads, its scratch
// buffers) the intercept beyond `empty_s`. FLOPs as the
// kernel recorder counts them: 4 and 10 per (query, key, dimension). A
// shape whose 56 more heads take less time than their work at `cap`'s
// best rate (tiny heads, where the call's cost hides them) is rated at it.
AttentionProfile MeasureAttention(const torch::Device& device, bool quick, double empty_s,
                                  RateCap* cap);

}  // namespace hpt

#endif  // HPT_WORKERS_ATTENTION_CALIBRATION_H_
