#include "workers/device_calibration.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/gpu/kernel_cost.h"
#include "workers/cuda_timing.h"
#include "workers/nvml_energy.h"

namespace hpt {
namespace {

using Clock = std::chrono::steady_clock;

// The median over `runs` of the seconds `body` takes, after one warm-up;
// the device is synchronised around each run.
template <typename F>
double MedianS(const torch::Device& device, int runs, F body) {
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  };
  std::vector<double> t;
  for (int r = 0; r <= runs; ++r) {
    sync();
    const Clock::time_point start = Clock::now();
    body();
    sync();
    if (r > 0) t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

double DispatchS(const torch::Device& device, int ops) {
  torch::Tensor x = torch::ones({4}, torch::TensorOptions().device(device).requires_grad(true));
  const double s = MedianS(device, 5, [&] {
    torch::Tensor y = x;
    for (int i = 0; i < ops / 4; ++i) {
      y = torch::relu(y.mul(1.0001).add(1e-4).neg().neg());
    }
  });
  return s / double(ops / 4 * 5);
}

// Achieved rates of products over transformer-like shapes.
std::vector<std::pair<double, double>> GemmRates(const torch::Device& device, bool quick) {
  torch::NoGradGuard no_grad;
  auto opts = torch::TensorOptions().device(device);
  torch::Tensor a1 = torch::randn({1, 1}, opts), b1 = torch::randn({1, 1}, opts);
  const double empty_s = MedianS(device, 9, [&] {
    for (int i = 0; i < 100; ++i) torch::mm(a1, b1);
  }) / 100;
  std::vector<std::pair<double, double>> rates;
  const std::vector<int64_t> ms = quick ? std::vector<int64_t>{16, 128, 1024}
                                        : std::vector<int64_t>{1, 8, 32, 128, 512, 2048, 8192};
  const std::vector<int64_t> ns = quick ? std::vector<int64_t>{64, 512}
                                        : std::vector<int64_t>{32, 128, 512, 2048};
  for (int64_t m : ms) {
    for (int64_t n : ns) {
      torch::Tensor a = torch::randn({m, n}, opts), b = torch::randn({n, n}, opts);
      const double flops = 2.0 * double(m) * double(n) * double(n);
      const double bytes = 4.0 * double(2 * m * n + n * n);  // a, b and the result
      const int reps = int(std::clamp(2e9 / flops, 1.0, 200.0));
      const double s = MedianS(device, quick ? 3 : 5, [&] {
        for (int i = 0; i < reps; ++i) torch::mm(a, b);
      }) / reps;
      rates.push_back({GemmSize(flops, bytes), flops / std::max(s - empty_s, 1e-9)});
    }
  }
  std::sort(rates.begin(), rates.end());
  // One rate a size: shapes of equal size average.
  std::vector<std::pair<double, double>> merged;
  for (const auto& r : rates) {
    if (!merged.empty() && merged.back().first == r.first) {
      merged.back().second = 0.5 * (merged.back().second + r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

// Achieved bandwidth of an element-wise op by bytes moved (input read,
// output written), from cache-sized to DRAM-sized working sets, beyond
// the dispatch of the same op on one element.
std::vector<std::pair<double, double>> MemoryRates(const torch::Device& device, bool quick) {
  torch::NoGradGuard no_grad;
  auto opts = torch::TensorOptions().device(device);
  torch::Tensor one = torch::randn({1}, opts), one_out = torch::empty_like(one);
  const double empty_s = MedianS(device, 9, [&] {
    for (int i = 0; i < 100; ++i) torch::mul_out(one_out, one, 1.0001);
  }) / 100;
  std::vector<std::pair<double, double>> rates;
  const int top = quick ? 22 : 26;
  for (int log2 = 10; log2 <= top; log2 += 2) {
    const int64_t n = int64_t(1) << log2;
    torch::Tensor x = torch::randn({n}, opts), y = torch::empty_like(x);
    const double bytes = 2.0 * 4.0 * double(n);
    const int reps = int(std::clamp(2e8 / bytes, 1.0, 1000.0));
    const double s = MedianS(device, quick ? 3 : 5, [&] {
      for (int i = 0; i < reps; ++i) torch::mul_out(y, x, 1.0001);
    }) / reps;
    rates.push_back({bytes, bytes / std::max(s - empty_s, 1e-9)});
  }
  return rates;
}

// Mean board power while `body` repeats for `window_s`.
template <typename F>
double PowerW(const NvmlEnergy& nvml, const torch::Device& device, double window_s, F body) {
  torch::cuda::synchronize(device.index());
  const double j0 = nvml.TotalJ();
  const Clock::time_point start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < window_s) body();
  torch::cuda::synchronize(device.index());
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return (nvml.TotalJ() - j0) / s;
}

absl::Status MeasurePower(const torch::Device& device, const CalibrationOptions& o,
                          GpuSpec* g) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml = NvmlEnergy::Open("", device.index());
  if (!nvml.ok()) return nvml.status();
  g->name = (*nvml)->name();
  const double w = o.power_window_s;
  g->idle_power_w = PowerW(**nvml, device, w, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  torch::Tensor x = torch::ones({4}, torch::TensorOptions().device(device).requires_grad(true));
  g->active_power_w = PowerW(**nvml, device, w, [&] { x.mul(1.0001).add(1e-4).sum(); });
  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::randn({8192, 8192}, torch::TensorOptions().device(device));
  g->load_power_w = PowerW(**nvml, device, w, [&] { torch::mm(a, a); });
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GpuSpec> CalibrateDevice(const CalibrationOptions& o) {
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(o.device);
  } catch (const std::exception&) {
    return absl::InvalidArgumentError(absl::StrCat("device '", o.device, "' is not cpu or cuda:N"));
  }
  if (device.is_cuda() && !torch::cuda::is_available()) {
    return absl::FailedPreconditionError(absl::StrCat("device ", o.device, ": no CUDA here"));
  }
  if (device.is_cuda() && !device.has_index()) device = torch::Device(torch::kCUDA, 0);
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  GpuSpec g;
  g.name = device.str();
  g.synchronous = device.is_cpu();
  g.python_op_s = kPythonOpS;
  g.compute_share = g.memory_share = 1;  // the rates below are achieved ones
  g.dispatch_s = DispatchS(device, o.quick ? 4000 : 40000);
  say(absl::StrFormat("dispatch per op        %.2f us", 1e6 * g.dispatch_s));
  g.gemm_rates = GemmRates(device, o.quick);
  for (const auto& [flops, rate] : g.gemm_rates) g.fp32_flops = std::max(g.fp32_flops, rate);
  say(absl::StrFormat("GEMM rates             %zu sizes, best %.1f GFLOP/s", g.gemm_rates.size(),
                      1e-9 * g.fp32_flops));
  g.memory_rates = MemoryRates(device, o.quick);
  g.memory_bw = g.memory_rates.back().second;
  say(absl::StrFormat("memory bandwidth       %.1f GB/s at %.0f MB (%zu sizes)",
                      1e-9 * g.memory_bw, 1e-6 * g.memory_rates.back().first,
                      g.memory_rates.size()));
  if (device.is_cuda()) {
    absl::StatusOr<double> node = CudaGraphNodeS(device.index());
    if (!node.ok()) return node.status();
    g.min_kernel_s = *node;  // a node's cost folded into the shortest kernel's
    say(absl::StrFormat("graph node (tiny add)  %.2f us", 1e6 * g.min_kernel_s));
    if (absl::Status s = MeasurePower(device, o, &g); !s.ok()) {
      say(absl::StrCat("power                  not measured: ", s.message()));
    } else {
      say(absl::StrFormat("power                  idle %.0f W, stepping %.0f W, GEMM %.0f W",
                          g.idle_power_w, g.active_power_w, g.load_power_w));
    }
  }
  g.source = absl::StrCat("hpt_calibrate on ", g.name, " (", device.str(), "), LibTorch ",
                          TORCH_VERSION, "; python_op_s cited (pytorch#41383)");
  return g;
}

}  // namespace hpt
