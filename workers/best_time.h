// The least of several timed runs on a LibTorch device, for the
// calibration's microbenchmarks (device_calibration.cc,
// host_calibration.cc). Includes LibTorch: calibration sources only.
//
//   double s = BestS(device, 5, [&] { torch::mm(a, b); });
//   double b = BestS(device, 5, [&] { y = Chain(x); }, [&] { y.backward(); });
//   double d = DeviceBestS(device, 5, [&] { torch::mm(a, b); });  // kernels alone
#ifndef HPT_WORKERS_BEST_TIME_H_
#define HPT_WORKERS_BEST_TIME_H_

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "workers/cuda_timing.h"

namespace hpt {

// The least over `runs` of the seconds `body` takes, after one warm-up;
// `prepare` runs before each, untimed (what a body uses up, such as a
// graph that runs backward once). The device is synchronised around each
// run. The least, not the median: other work on a shared machine (a cloud
// VM's neighbours) only ever adds time, and the steps a profile is
// checked against are timed the same way.
template <typename P, typename F>
double BestS(const torch::Device& device, int runs, P prepare, F body) {
  using Clock = std::chrono::steady_clock;
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  };
  std::vector<double> t;
  for (int r = 0; r <= runs; ++r) {
    prepare();
    sync();
    const Clock::time_point start = Clock::now();
    body();
    sync();
    if (r > 0) t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return *std::min_element(t.begin(), t.end());
}

template <typename F>
double BestS(const torch::Device& device, int runs, F body) {
  return BestS(device, runs, [] {}, body);
}

// What `body`'s kernels take on the device, the least over `runs`: on
// CUDA, the body captured once as a CUDA graph and replayed
// (CudaGraphBestS), so a small kernel's own device time shows instead of
// the host's launch rate, which host_calibration measures apart; a body
// that cannot be captured, and every other device, BestS.
template <typename F>
double DeviceBestS(const torch::Device& device, int runs, F body) {
  if (device.is_cuda()) {
    absl::StatusOr<double> s = CudaGraphBestS(device.index(), runs, body);
    if (s.ok()) return *s;
  }
  return BestS(device, runs, body);
}

}  // namespace hpt

#endif  // HPT_WORKERS_BEST_TIME_H_
