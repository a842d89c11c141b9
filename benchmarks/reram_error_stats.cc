// The ReRAM read's output error, as statistics: for W (K x N, Gaussian)
// and inputs (rows x K, Gaussian), y = x W through the ReRAM layer model
// against the fp32 product. Prints, per setting, the mean and standard
// deviation of (y - y_fp32) relative to the fp32 outputs' RMS, for
// tools/aihwkit_compare.sh to set beside IBM aihwkit's analog tile.
//
//   bazel run -c opt //benchmarks:reram_error_stats -- [--in=512 --out=512 --rows=256]
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "devices/reram/reram_layer.h"

ABSL_FLAG(int, in, 512, "Input features K (crossbar rows used: K / 128 crossbars tall).");
ABSL_FLAG(int, out, 512, "Output features N.");
ABSL_FLAG(int, rows, 256, "Input vectors.");
ABSL_FLAG(int, trials, 5, "Independent draws of W and x (the statistics pool them).");

namespace hpt {
namespace {

struct Setting {
  std::string name;
  ReramConfig config;
};

int Main() {
  const int k = absl::GetFlag(FLAGS_in), n = absl::GetFlag(FLAGS_out),
            m = absl::GetFlag(FLAGS_rows);
  std::vector<Setting> settings(4);
  settings[0].name = "8-bit weights and inputs, 5-bit ADC, per-read ranging, no noise";
  settings[1].name = "the same, ADC at full scale (fixed range, as aihwkit's out_bound)";
  settings[1].config.adc_ranging = AdcRanging::kFullScale;
  settings[2].name = "per-read ranging, read and programming noise 0.02 level";
  settings[2].config.read_noise_sigma = 0.02;
  settings[2].config.program_noise_sigma = 0.02;
  settings[3].name = "per-read ranging, read and programming noise 0.1 level";
  settings[3].config.read_noise_sigma = 0.1;
  settings[3].config.program_noise_sigma = 0.1;
  std::printf("ReRAM model (devices/reram, NeuroSim V1.3 defaults: 128 x 128 crossbars, 2-bit "
              "cells, 8 columns per ADC): W %d x %d ~ N(0, 1/K), x ~ N(0, 1), %d rows, %d draws\n",
              k, n, m, absl::GetFlag(FLAGS_trials));
  for (const Setting& s : settings) {
    double sum = 0, sq = 0, ref_sq = 0;
    int64_t count = 0;
    for (int trial = 0; trial < absl::GetFlag(FLAGS_trials); ++trial) {
      std::mt19937_64 rng(1000 + trial);
      std::normal_distribution<float> wdist(0, 1.0f / std::sqrt(float(k))), xdist(0, 1);
      std::vector<float> w(size_t(k) * n), x(size_t(m) * k), y(size_t(m) * n);
      for (float& v : w) v = wdist(rng);
      for (float& v : x) v = xdist(rng);
      ReramConfig config = s.config;
      config.seed = 7 + trial;
      absl::StatusOr<ReramLayer> layer = ReramLayer::Create(config, k, n);
      if (!layer.ok() || !layer->Program(w.data()).ok() || !layer->Forward(x.data(), m, y.data()).ok()) {
        std::fprintf(stderr, "the ReRAM layer failed\n");
        return 1;
      }
      for (int r = 0; r < m; ++r) {
        for (int c = 0; c < n; ++c) {
          double ref = 0;
          for (int i = 0; i < k; ++i) ref += double(x[size_t(r) * k + i]) * w[size_t(i) * n + c];
          const double e = y[size_t(r) * n + c] - ref;
          sum += e;
          sq += e * e;
          ref_sq += ref * ref;
          ++count;
        }
      }
    }
    const double rms = std::sqrt(ref_sq / count), mean = sum / count;
    const double sd = std::sqrt(std::max(0.0, sq / count - mean * mean));
    std::printf("hpt   | %-66s | mean %+.5f | sd %.5f\n", s.name.c_str(), mean / rms, sd / rms);
  }
  return 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return hpt::Main();
}
