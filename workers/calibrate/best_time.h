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
#include <utility>
#include <vector>

#include "workers/gpu/cuda_timing.h"

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

// Rates from marginal times (a kernel's time beyond a call's fixed cost),
// at most `best`, the best product rate measured on products large enough
// to time: a marginal time shorter than the work takes at that rate (or
// none at all) is below what the clock resolves, so such a kernel is rated
// at `best` and counted, never divided by a floor of time.
struct RateCap {
  double best = 0;
  int capped = 0;
  double Rate(double work, double marginal_s) {
    if (marginal_s * best > work) return work / marginal_s;
    ++capped;
    return best;
  }
};

// The cap for timings of (work, whole seconds) beyond `fixed_s` a call:
// the best rate of those whose marginal time is at least half their whole
// time (timed well apart from the call's cost), or, where none is, the
// best rate over whole times (a bound from below).
inline RateCap ResolvedCap(const std::vector<std::pair<double, double>>& timed, double fixed_s) {
  RateCap cap;
  double whole_best = 0;
  for (const auto& [work, s] : timed) {
    if (s - fixed_s >= 0.5 * s) cap.best = std::max(cap.best, work / (s - fixed_s));
    whole_best = std::max(whole_best, work / s);
  }
  if (cap.best <= 0) cap.best = whole_best;
  return cap;
}

// The rates of `timed` (work, whole seconds) beyond `fixed_s` a call, held
// to the best resolved rate so far (`cap`'s) or among these (a grid's large
// products may outrun the size table's); `cap` keeps the better and counts
// the rates held.
inline std::vector<double> RatesHeldTo(const std::vector<std::pair<double, double>>& timed,
                                       double fixed_s, RateCap* cap) {
  RateCap held = ResolvedCap(timed, fixed_s);
  held.best = std::max(held.best, cap->best);
  std::vector<double> rates;
  for (const auto& [work, s] : timed) rates.push_back(held.Rate(work, s - fixed_s));
  cap->best = held.best;
  cap->capped += held.capped;
  return rates;
}

}  // namespace hpt

#endif  // HPT_WORKERS_BEST_TIME_H_
