// Row kernels' achieved rates over rows and row widths, forward and
// backward, on `device`: layer norm (GpuSpec::norm_grid,
// norm_backward_grid) and softmax (softmax_grid, softmax_backward_grid).
// Each reduces a row, then writes it. Part of the calibration
// (device_calibration.h); includes LibTorch.
//
//   RowGrids g = MeasureLayerNorm(torch::Device(torch::kCPU), true, empty_s);
//   double elements_per_s = g.forward.Rate(GemmShape{1024, 32, 1});  // rows, width
#ifndef HPT_WORKERS_NORM_CALIBRATION_H_
#define HPT_WORKERS_NORM_CALIBRATION_H_

#include <torch/torch.h>

#include "devices/gpu/gemm_grid.h"

namespace hpt {

struct RowGrids {
  GemmGrid forward, backward;  // elements a second; m rows, n width, k 1
};

// native_layer_norm and native_layer_norm_backward timed at every rows x
// width of the grid (RowKernelRows, RowKernelWidths; fewer when `quick`),
// beyond `empty_s` (an empty element-wise op's time: the op's dispatch).
RowGrids MeasureLayerNorm(const torch::Device& device, bool quick, double empty_s);

// The same of _softmax and _softmax_backward_data over the last dim.
RowGrids MeasureSoftmax(const torch::Device& device, bool quick, double empty_s);

}  // namespace hpt

#endif  // HPT_WORKERS_NORM_CALIBRATION_H_
