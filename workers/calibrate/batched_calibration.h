// A batch of products' achieved rate (GpuSpec::gemm_grid_batched) by one
// product's m, k and n, on `device`, each batch large enough to fill the
// device (calibration_shapes.h: BatchOf). Part of the calibration
// (device_calibration.h); includes LibTorch.
//
//   RateCap products{best};
//   GemmGrid g = MeasureBatchedGrid(torch::Device(torch::kCPU), true, empty_s, &products);
//   double flops_per_s = g.Rate(GemmShape{12, 12, 16});  // one product's m, n, k
#ifndef HPT_WORKERS_BATCHED_CALIBRATION_H_
#define HPT_WORKERS_BATCHED_CALIBRATION_H_

#include <torch/torch.h>

#include "devices/gpu/gemm_grid.h"
#include "workers/calibrate/best_time.h"

namespace hpt {

// torch::bmm of BatchOf(m, k, n) products at every m, k and n of
// BatchedGridAxis, timed beyond `empty_s` (an empty product's time), each
// rate held to `cap` as the product grids' are (and `cap` raised to a
// better resolved rate).
GemmGrid MeasureBatchedGrid(const torch::Device& device, bool quick, double empty_s, RateCap* cap);

}  // namespace hpt

#endif  // HPT_WORKERS_BATCHED_CALIBRATION_H_
