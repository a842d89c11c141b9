// Layer norm's achieved rate (GpuSpec::norm_grid, norm_backward_grid) over
// rows and normalised widths, forward and backward, on `device`. Part of
// the calibration (device_calibration.h); includes LibTorch.
//
//   LayerNormGrids g = MeasureLayerNorm(torch::Device(torch::kCPU), true, empty_s);
//   double elements_per_s = g.forward.Rate(GemmShape{1024, 32, 1});  // rows, width
#ifndef HPT_WORKERS_NORM_CALIBRATION_H_
#define HPT_WORKERS_NORM_CALIBRATION_H_

#include <torch/torch.h>

#include "devices/gpu/gemm_grid.h"

namespace hpt {

struct LayerNormGrids {
  GemmGrid forward, backward;  // elements a second; m rows, n width, k 1
};

// Each of native_layer_norm and native_layer_norm_backward timed at every
// rows x width of the grid (fewer when `quick`), beyond `empty_s` (an
// empty element-wise op's time: the op's dispatch).
LayerNormGrids MeasureLayerNorm(const torch::Device& device, bool quick, double empty_s);

}  // namespace hpt

#endif  // HPT_WORKERS_NORM_CALIBRATION_H_
