#include "workers/calibrate/batched_calibration.h"

#include <utility>
#include <vector>

#include "workers/calibrate/calibration_shapes.h"

namespace hpt {

GemmGrid MeasureBatchedGrid(const torch::Device& device, bool quick, double empty_s, RateCap* cap) {
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> axis = BatchedGridAxis(quick);
  const auto opts = torch::TensorOptions().device(device);
  const int runs = quick ? 3 : 5;
  std::vector<std::pair<double, double>> timed;  // (FLOPs, s), in the grid's order
  for (int64_t m : axis) {
    for (int64_t k : axis) {
      for (int64_t n : axis) {
        const int64_t batch = BatchOf(m, k, n, quick, device.is_cuda());
        const torch::Tensor a = torch::randn({batch, m, k}, opts);
        const torch::Tensor b = torch::randn({batch, k, n}, opts);
        const double s = DeviceBestS(device, runs, [&] { torch::bmm(a, b); });
        timed.push_back({2.0 * double(batch) * double(m) * double(k) * double(n), s});
      }
    }
  }
  return *GemmGrid::Make(axis, axis, axis, RatesHeldTo(timed, empty_s, cap));
}

}  // namespace hpt
