// gpu_step_cost: one real LibTorch training step (forward, MSE backward,
// Adam update) of a preset, its kernels recorded and costed on a reference
// GPU (devices/gpu/kernel_cost.h); beside it the old whole-task roofline
// of the analytic FLOPs, for comparison in the same run.
//
//   bazel run -c opt //benchmarks:gpu_step_cost -- --preset=wind --batch=1
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "devices/gpu/kernel_cost.h"
#include "devices/gpu/roofline.h"
#include "models/model_config.h"
#include "models/model_flops.h"
#include "models/st_transformer.h"
#include "workers/gpu/kernel_recorder.h"

ABSL_FLAG(std::string, preset, "wind", "Model preset.");
ABSL_FLAG(int64_t, batch, 32, "Samples per step.");
ABSL_FLAG(int64_t, tokens, 57, "Tokens per sample (wind: 57 farms).");
ABSL_FLAG(int64_t, input_features, 12, "Features per token (input steps).");
ABSL_FLAG(std::string, gpu, "v100",
          "Reference GPU preset: v100, a100, h100, ... (a name it does not know lists them).");
ABSL_FLAG(int, top, 8, "Ops to list by simulated time.");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto config = hpt::PresetModelConfig(absl::GetFlag(FLAGS_preset));
  auto gpu = hpt::GpuPreset(absl::GetFlag(FLAGS_gpu));
  if (!config.ok() || !gpu.ok()) {
    std::fprintf(stderr, "%s\n", std::string((config.ok() ? gpu.status() : config.status())
                                                 .message()).c_str());
    return 2;
  }
  config->set_input_features(int32_t(absl::GetFlag(FLAGS_input_features)));
  config->set_output_features(1);
  const int64_t batch = absl::GetFlag(FLAGS_batch), tokens = absl::GetFlag(FLAGS_tokens);
  torch::manual_seed(1);
  hpt::SpatioTemporalTransformer model(*config);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  torch::Tensor x = torch::randn({batch, tokens, config->input_features()});
  torch::Tensor y = torch::randn({batch, tokens, 1});
  // A first step outside the recording: Adam's state exists from then on.
  for (int warm = 0; warm < 2; ++warm) {
    hpt::KernelRecorder forward_recorder;
    torch::Tensor loss = torch::mse_loss(model->forward(x), y);
    auto forward = forward_recorder.Finish();
    hpt::KernelRecorder backward_recorder;
    adam.zero_grad();
    loss.backward();
    auto backward = backward_recorder.Finish();
    hpt::KernelRecorder update_recorder;
    adam.step();
    auto update = update_recorder.Finish();
    if (warm == 0) continue;
    std::printf("%s preset, batch %lld x %lld tokens, reference %s (fp32)\n",
                config->preset().c_str(), (long long)batch, (long long)tokens,
                gpu->name.c_str());
    std::printf("  %-9s %8s %12s %12s %14s\n", "task", "kernels", "launch-bound",
                "simulated", "launch share");
    hpt::GpuStepCost total;
    std::map<std::string, std::pair<int64_t, double>> by_op;
    for (auto* part : {&forward, &backward, &update}) {
      const hpt::GpuStepCost c = hpt::CostKernels(*gpu, hpt::GpuPrecision::kFp32, *part);
      const char* name = part == &forward ? "forward" : part == &backward ? "backward" : "update";
      std::printf("  %-9s %8lld %12lld %10.3f ms %13.1f%%\n", name, (long long)c.kernels,
                  (long long)c.launch_bound_kernels, c.time_s * 1e3,
                  100 * c.launch_bound_share());
      total.kernels += c.kernels;
      total.launch_bound_kernels += c.launch_bound_kernels;
      total.time_s += c.time_s;
      total.launch_bound_s += c.launch_bound_s;
      total.energy_j += c.energy_j;
      for (const hpt::GpuKernel& k : *part) {
        if (hpt::LaunchesNoKernel(k.op)) continue;
        const double t = hpt::CostKernels(*gpu, hpt::GpuPrecision::kFp32, {k}).time_s;
        by_op[k.op].first += 1;
        by_op[k.op].second += t;
      }
    }
    std::printf("  %-9s %8lld %12lld %10.3f ms %13.1f%%   energy %.3f mJ\n", "step",
                (long long)total.kernels, (long long)total.launch_bound_kernels,
                total.time_s * 1e3, 100 * total.launch_bound_share(), total.energy_j * 1e3);
    const hpt::ModelWork work = hpt::ForwardWork(*config, batch, tokens, false);
    const hpt::GpuCost roofline =
        hpt::RooflineCost(*gpu, hpt::GpuPrecision::kFp32, 3 * work.flops, 3 * work.bytes);
    std::printf("  whole-step roofline of the analytic FLOPs (the old model): %.3f ms "
                "(%.2fx the kernel model)\n",
                roofline.time_s * 1e3, roofline.time_s / total.time_s);
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [op, v] : by_op) ranked.push_back({v.second, op});
    std::sort(ranked.rbegin(), ranked.rend());
    std::printf("  ops by simulated time:\n");
    for (int i = 0; i < absl::GetFlag(FLAGS_top) && i < int(ranked.size()); ++i) {
      std::printf("    %-28s %6lld kernels %10.3f ms\n", ranked[i].second.c_str(),
                  (long long)by_op[ranked[i].second].first, ranked[i].first * 1e3);
    }
  }
  return 0;
}
