// Cost of simulating a ReRAM forward pass: a 512 x 512 layer on a 928-row
// input, fast and bit-exact numerics, against a plain fp32 LibTorch matmul
// of the same shape, all timed in this run.
//
//   bazel run //benchmarks:reram_forward_bench
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/median_time.h"
#include "common/process_setup.h"
#include "devices/reram/reram_layer.h"

ABSL_FLAG(int, rows, 928, "Input rows.");
ABSL_FLAG(int, features, 512, "Layer size (square).");
ABSL_FLAG(int, repeats, 20, "Timed repetitions (median reported).");
ABSL_FLAG(int, exact_repeats, 2, "Timed repetitions of the bit-exact mode.");

using hpt::MedianSeconds;

int main(int argc, char** argv) {
  // As the workers run: idle LibTorch and OpenBLAS threads sleep.
  hpt::UseShortThreadSpins(argv);
  absl::ParseCommandLine(argc, argv);
  const int64_t m = absl::GetFlag(FLAGS_rows), k = absl::GetFlag(FLAGS_features),
                n = k;
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({m, k});
  torch::Tensor w = torch::randn({k, n}) * 0.05;
  torch::Tensor out;
  const double torch_s = MedianSeconds(absl::GetFlag(FLAGS_repeats),
                                       [&] { out = torch::matmul(x, w); });

  std::vector<float> y(m * n);
  auto run = [&](hpt::ReramNumerics numerics, int repeats) {
    hpt::ReramConfig c;
    c.numerics = numerics;
    auto layer = hpt::ReramLayer::Create(c, k, n);
    if (!layer.ok() || !layer->Program(w.data_ptr<float>()).ok()) std::abort();
    return MedianSeconds(repeats, [&] {
      if (!layer->Forward(x.data_ptr<float>(), m, y.data()).ok()) std::abort();
    });
  };
  const double fast_s = run(hpt::ReramNumerics::kFast, absl::GetFlag(FLAGS_repeats));
  hpt::ReramLayer::SetInt8Reads(false);
  const double fast_fp32_s = run(hpt::ReramNumerics::kFast, absl::GetFlag(FLAGS_repeats));
  hpt::ReramLayer::SetInt8Reads(true);
  const double exact_s =
      run(hpt::ReramNumerics::kBitExact, absl::GetFlag(FLAGS_exact_repeats));
  std::printf("%lld x %lld input, %lld x %lld layer, 5-bit ADC (NeuroSim defaults)\n",
              (long long)m, (long long)k, (long long)k, (long long)n);
  std::printf("LibTorch fp32 matmul   %8.3f ms\n", torch_s * 1e3);
  std::printf("ReRAM fast forward     %8.3f ms  ratio %.2f (goal <= 1.5; int8 product)\n",
              fast_s * 1e3, fast_s / torch_s);
  std::printf("  with the fp32 product %7.3f ms  ratio %.2f\n", fast_fp32_s * 1e3,
              fast_fp32_s / torch_s);
  std::printf("ReRAM bit-exact        %8.3f ms  ratio %.1f\n", exact_s * 1e3,
              exact_s / torch_s);
  return 0;
}
