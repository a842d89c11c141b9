#include "workers/calibrate/memory_calibration.h"

#include <algorithm>

#include "workers/calibrate/best_time.h"

namespace hpt {

std::vector<torch::Tensor> Operands(const torch::Device& device, const std::vector<int64_t>& shape,
                                    StreamPool* streamed) {
  if (streamed != nullptr) return streamed->Operands(shape);
  return {torch::randn(shape, torch::TensorOptions().device(device))};
}

void ScaleOnce(const torch::Tensor& x, torch::Tensor& out, bool in_place, int i) {
  if (in_place) {
    x.mul_(i % 2 == 0 ? 1.0001 : 1 / 1.0001);
    return;
  }
  // The factor as a 0-dim tensor: mul.out's one kernel. torch::mul_out
  // with a number is mul.Scalar_out, an out variant ATen generates as the
  // functional op then a copy into `out`: two passes over the data. On the
  // CPU here (LibTorch 2.12, one thread, 65,536 floats) it took 20.4 us
  // against 9.4 for mul.out and 9.1 for mul_; an H200's out-of-place
  // rates came out at half its in-place ones at every size (2026-11-28).
  static const torch::Tensor factor = torch::scalar_tensor(1.0001, torch::kFloat);
  torch::mul_out(out, x, factor);
}

double EmptyElementwiseS(const torch::Device& device, bool in_place) {
  if (device.is_cuda()) return 0;
  torch::NoGradGuard no_grad;
  torch::Tensor one = torch::randn({1}, torch::TensorOptions().device(device));
  torch::Tensor one_out = torch::empty_like(one);
  return BestS(device, 9, [&] {
    for (int i = 0; i < 100; ++i) ScaleOnce(one, one_out, in_place, i);
  }) / 100;
}

// Achieved bandwidth of an element-wise op by bytes moved (input read,
// output written), from cache-sized to DRAM-sized working sets, beyond
// `empty_s` (EmptyElementwiseS); `streamed`: each repetition reads another
// input of a pool that no cache holds; `in_place`: the op writes its input
// (cached; to 34 MB moved when quick).
std::vector<std::pair<double, double>> MemoryRates(const torch::Device& device, bool quick,
                                                   double empty_s, StreamPool* streamed,
                                                   bool in_place) {
  torch::NoGradGuard no_grad;
  std::vector<std::pair<double, double>> timed;  // (bytes, s)
  // Cached: to 537 MB moved, past any cache, for EffectiveCacheBytes; the
  // streamed pass needs no knee, and a quick one stops at 34 MB.
  const int top = quick && (streamed != nullptr || in_place) ? 22 : 26;
  for (int log2 = 10; log2 <= top; log2 += 2) {
    const int64_t n = int64_t(1) << log2;
    const std::vector<torch::Tensor> x = Operands(device, {n}, streamed);
    torch::Tensor y = torch::empty_like(x[0]);
    const double bytes = 2.0 * 4.0 * double(n);
    const int reps = int(std::clamp(2e8 / bytes, 1.0, 1000.0));
    size_t next = 0;  // runs go on through the pool: a run's first read is not the last run's
    const double s = DeviceBestS(device, quick ? 3 : 5, [&] {
      for (int i = 0; i < reps; ++i) ScaleOnce(x[next++ % x.size()], y, in_place, i);
    }) / reps;
    if (streamed != nullptr) streamed->ReadUpTo(x[next % x.size()]);
    timed.push_back({bytes, s});
  }
  // Held to the best rate of sizes timed well apart from the op's dispatch
  // (ResolvedCap): a smaller size's time beyond it may be below the clock's.
  RateCap cap = ResolvedCap(timed, empty_s);
  std::vector<std::pair<double, double>> rates;
  for (const auto& [bytes, s] : timed) rates.push_back({bytes, cap.Rate(bytes, s - empty_s)});
  return rates;
}

}  // namespace hpt
