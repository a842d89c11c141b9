#include "workers/calibrate/norm_calibration.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "workers/calibrate/best_time.h"

namespace hpt {

LayerNormGrids MeasureLayerNorm(const torch::Device& device, bool quick, double empty_s) {
  torch::NoGradGuard no_grad;
  // Rows: a few tokens to a large batch's; widths: the presets' d_model.
  const std::vector<int64_t> rows = quick ? std::vector<int64_t>{16, 256, 4096}
                                          : std::vector<int64_t>{8, 32, 128, 512, 2048, 8192};
  const std::vector<int64_t> widths = quick ? std::vector<int64_t>{32, 256, 2048}
                                            : std::vector<int64_t>{16, 32, 64, 128, 256, 512,
                                                                   1024, 2048};
  const int runs = quick ? 3 : 5;
  std::vector<double> forward, backward;
  std::vector<std::pair<double, double>> forward_timed, backward_timed;  // (elements, s)
  for (int64_t r : rows) {
    for (int64_t w : widths) {
      const auto opts = torch::TensorOptions().device(device);
      const torch::Tensor x = torch::randn({r, w}, opts), grad = torch::randn({r, w}, opts);
      const torch::Tensor weight = torch::ones({w}, opts), bias = torch::zeros({w}, opts);
      const std::array<int64_t, 1> normalized{w};
      const auto [y, mean, rstd] = at::native_layer_norm(x, normalized, weight, bias, 1e-5);
      const double elements = double(r) * double(w);
      const int reps = int(std::clamp(2e7 / elements, 1.0, 1000.0));
      const double forward_s = DeviceBestS(device, runs, [&] {
        for (int i = 0; i < reps; ++i) at::native_layer_norm(x, normalized, weight, bias, 1e-5);
      }) / reps;
      const double backward_s = DeviceBestS(device, runs, [&] {
        for (int i = 0; i < reps; ++i) {
          at::native_layer_norm_backward(grad, x, normalized, mean, rstd, weight, bias,
                                         {true, true, true});
        }
      }) / reps;
      forward_timed.push_back({elements, forward_s});
      backward_timed.push_back({elements, backward_s});
    }
  }
  // Each direction's rates held to its best among shapes timed well apart
  // from an op's dispatch (ResolvedCap): a smaller one's time beyond it may
  // be below the clock's.
  for (auto [timed, rates] : {std::pair{&forward_timed, &forward},
                              std::pair{&backward_timed, &backward}}) {
    RateCap cap = ResolvedCap(*timed, empty_s);
    for (const auto& [elements, s] : *timed) rates->push_back(cap.Rate(elements, s - empty_s));
  }
  return {*GemmGrid::Make(rows, {1}, widths, std::move(forward)),
          *GemmGrid::Make(rows, {1}, widths, std::move(backward))};
}

}  // namespace hpt
