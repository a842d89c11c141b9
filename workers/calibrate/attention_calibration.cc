#include "workers/calibrate/attention_calibration.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "workers/calibrate/best_time.h"

namespace hpt {

AttentionProfile MeasureAttention(const torch::Device& device, bool quick, double empty_s,
                                  RateCap* cap) {
  const std::vector<int64_t> lengths = quick ? std::vector<int64_t>{16, 64, 256}
                                             : std::vector<int64_t>{16, 32, 64, 128, 256};
  const std::vector<int64_t> dims = quick ? std::vector<int64_t>{8, 32, 128}
                                          : std::vector<int64_t>{8, 16, 32, 64, 128};
  constexpr int64_t kFewHeads = 8, kManyHeads = 64;
  const int runs = quick ? 3 : 5;
  // Seconds of a forward and of a backward over `heads` heads of one shape.
  auto time = [&](int64_t heads, int64_t lq, int64_t lk, int64_t d) {
    auto opts = torch::TensorOptions().device(device).requires_grad(true);
    torch::Tensor q = torch::randn({heads, 1, lq, d}, opts);
    torch::Tensor k = torch::randn({heads, 1, lk, d}, opts);
    torch::Tensor v = torch::randn({heads, 1, lk, d}, opts);
    torch::Tensor grad = torch::randn({heads, 1, lq, d}, torch::TensorOptions().device(device));
    const double pairs = double(heads) * double(lq) * double(lk) * double(d);
    const int reps = int(std::clamp(2e7 / (10 * pairs), 1.0, 50.0));
    const double f = DeviceBestS(device, runs, [&] {
      for (int i = 0; i < reps; ++i) at::scaled_dot_product_attention(q, k, v);
    }) / reps;
    const double fb = DeviceBestS(device, runs, [&] {
      for (int i = 0; i < reps; ++i) at::scaled_dot_product_attention(q, k, v).backward(grad);
    }) / reps;
    return std::pair<double, double>{f, fb - f};
  };
  std::vector<double> forward, backward, forward_call, backward_call;
  for (int64_t lq : lengths) {  // the grid's order: m, then k, then n
    for (int64_t d : dims) {
      for (int64_t lk : lengths) {
        const auto [f1, b1] = time(kFewHeads, lq, lk, d);
        const auto [f2, b2] = time(kManyHeads, lq, lk, d);
        const double pairs_per_head = double(lq) * double(lk) * double(d);
        const double heads = double(kManyHeads - kFewHeads);
        forward.push_back(cap->Rate(4 * pairs_per_head * heads, f2 - f1));
        backward.push_back(cap->Rate(10 * pairs_per_head * heads, b2 - b1));
        forward_call.push_back(f1 - (f2 - f1) * kFewHeads / heads - empty_s);
        backward_call.push_back(b1 - (b2 - b1) * kFewHeads / heads - empty_s);
      }
    }
  }
  // The fixed costs: the median over shapes (the intercept is noisy), at
  // least nothing.
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return std::max(0.0, v[v.size() / 2]);
  };
  AttentionProfile a;
  a.forward = *GemmGrid::Make(lengths, dims, lengths, std::move(forward));
  a.backward = *GemmGrid::Make(lengths, dims, lengths, std::move(backward));
  a.forward_call_s = median(forward_call);
  a.backward_call_s = median(backward_call);
  return a;
}

}  // namespace hpt
