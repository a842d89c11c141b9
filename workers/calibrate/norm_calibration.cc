#include "workers/calibrate/norm_calibration.h"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>
#include <vector>

#include "workers/calibrate/best_time.h"
#include "workers/calibrate/calibration_shapes.h"

namespace hpt {
namespace {

// A row kernel's two calls on an [r x w] input, made once per shape:
// forward and backward, each timed as a body.
struct RowCalls {
  std::function<void()> forward, backward;
};

// Every rows x width of the row kernels' grid, each direction's calls
// from `make`, timed beyond `empty_s`.
template <typename Make>
RowGrids MeasureRows(const torch::Device& device, bool quick, double empty_s, Make make) {
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> rows = RowKernelRows(quick), widths = RowKernelWidths(quick);
  const int runs = quick ? 3 : 5;
  std::vector<double> forward, backward;
  std::vector<std::pair<double, double>> forward_timed, backward_timed;  // (elements, s)
  for (int64_t r : rows) {
    for (int64_t w : widths) {
      const RowCalls calls = make(r, w);
      const double elements = double(r) * double(w);
      const int reps = int(std::clamp(2e7 / elements, 1.0, 1000.0));
      const double forward_s = DeviceBestS(device, runs,
                                           [&] {
                                             for (int i = 0; i < reps; ++i) calls.forward();
                                           }) /
                               reps;
      const double backward_s = DeviceBestS(device, runs,
                                            [&] {
                                              for (int i = 0; i < reps; ++i) calls.backward();
                                            }) /
                                reps;
      forward_timed.push_back({elements, forward_s});
      backward_timed.push_back({elements, backward_s});
    }
  }
  // Each direction's rates held to its best among shapes timed well apart
  // from an op's dispatch (ResolvedCap): a smaller one's time beyond it may
  // be below the clock's.
  for (auto [timed, rates] :
       {std::pair{&forward_timed, &forward}, std::pair{&backward_timed, &backward}}) {
    RateCap cap = ResolvedCap(*timed, empty_s);
    for (const auto& [elements, s] : *timed) rates->push_back(cap.Rate(elements, s - empty_s));
  }
  return {*GemmGrid::Make(rows, {1}, widths, std::move(forward)),
          *GemmGrid::Make(rows, {1}, widths, std::move(backward))};
}

}  // namespace

RowGrids MeasureLayerNorm(const torch::Device& device, bool quick, double empty_s) {
  return MeasureRows(device, quick, empty_s, [&](int64_t r, int64_t w) {
    const auto opts = torch::TensorOptions().device(device);
    const torch::Tensor x = torch::randn({r, w}, opts), grad = torch::randn({r, w}, opts);
    const torch::Tensor weight = torch::ones({w}, opts), bias = torch::zeros({w}, opts);
    const std::array<int64_t, 1> normalized{w};
    const auto [y, mean, rstd] = at::native_layer_norm(x, normalized, weight, bias, 1e-5);
    RowCalls calls;
    calls.forward = [=] { at::native_layer_norm(x, normalized, weight, bias, 1e-5); };
    calls.backward = [=, mean = mean, rstd = rstd] {
      at::native_layer_norm_backward(grad, x, normalized, mean, rstd, weight, bias,
                                     {true, true, true});
    };
    return calls;
  });
}

RowGrids MeasureSoftmax(const torch::Device& device, bool quick, double empty_s) {
  return MeasureRows(device, quick, empty_s, [&](int64_t r, int64_t w) {
    const auto opts = torch::TensorOptions().device(device);
    const torch::Tensor x = torch::randn({r, w}, opts), grad = torch::randn({r, w}, opts);
    const torch::Tensor y = torch::_softmax(x, -1, false);
    RowCalls calls;
    calls.forward = [=] { torch::_softmax(x, -1, false); };
    calls.backward = [=] { torch::_softmax_backward_data(grad, y, -1, x.scalar_type()); };
    return calls;
  });
}

}  // namespace hpt
