// What recording a step's kernels costs: the same LibTorch training step
// (forward, MSE backward, Adam update) of a preset, in one process, with a
// KernelRecorder active and without, alternating, medians of each. A GPU
// worker recorded every task until the kernel memo (workers/gpu/kernel_recorder.h
// KernelMemo): each task shape is now recorded twice, then recalled.
//
//   bazel run -c opt //benchmarks:recorder_overhead_bench -- --preset=wind --batch=1
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/median_time.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "workers/gpu/kernel_recorder.h"

ABSL_FLAG(std::string, preset, "wind", "Model preset.");
ABSL_FLAG(int64_t, batch, 1, "Samples per step.");
ABSL_FLAG(int64_t, tokens, 57, "Tokens per sample (wind: 57 farms).");
ABSL_FLAG(int64_t, input_features, 12, "Features per token (input steps).");
ABSL_FLAG(int, steps, 10, "Timed steps of each kind (after one warm-up of each).");
ABSL_FLAG(int, threads, 0, "LibTorch threads (0: default).");

namespace hpt {
namespace {

int Main() {
  if (absl::GetFlag(FLAGS_threads) > 0) torch::set_num_threads(absl::GetFlag(FLAGS_threads));
  absl::StatusOr<ModelConfig> config = PresetModelConfig(absl::GetFlag(FLAGS_preset));
  if (!config.ok()) {
    std::fprintf(stderr, "recorder_overhead_bench: %s\n", config.status().ToString().c_str());
    return 2;
  }
  config->set_input_features(absl::GetFlag(FLAGS_input_features));
  config->set_output_features(1);
  torch::manual_seed(0);
  SpatioTemporalTransformer model(*config);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  model->train();
  const int64_t batch = absl::GetFlag(FLAGS_batch), tokens = absl::GetFlag(FLAGS_tokens);
  torch::Tensor x = torch::randn({batch, tokens, config->input_features()});
  torch::Tensor y = torch::randn({batch, tokens, 1});
  size_t kernels = 0;
  // One step; with `record`, inside a recorder as a worker's tasks were.
  auto step = [&](bool record) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<KernelRecorder> recorder;
    if (record) recorder = std::make_unique<KernelRecorder>();
    torch::mse_loss(model->forward(x), y).backward();
    adam.step();
    adam.zero_grad();
    if (recorder) kernels = recorder->Finish().size();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  step(true);
  step(false);
  std::vector<double> plain, recorded;
  for (int i = 0; i < absl::GetFlag(FLAGS_steps); ++i) {
    recorded.push_back(step(true));
    plain.push_back(step(false));
  }
  const double p = Median(plain), r = Median(recorded);
  std::printf("preset %s, batch %lld x %lld tokens: %zu kernels a step\n",
              absl::GetFlag(FLAGS_preset).c_str(), static_cast<long long>(batch),
              static_cast<long long>(tokens), kernels);
  std::printf("step without recording  median %.2f ms over %zu steps\n", 1e3 * p, plain.size());
  std::printf("step while recording    median %.2f ms\n", 1e3 * r);
  std::printf("recording costs %.2f ms a step, %.2f us a kernel (ratio %.3f)\n", 1e3 * (r - p),
              1e6 * (r - p) / double(std::max<size_t>(kernels, 1)), r / p);
  return 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return hpt::Main();
}
