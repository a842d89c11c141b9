// hpt_probe: a preset's full training step timed for real under each GPU
// baseline on this machine's device (workers/gpu/baseline_probe.h): the same
// probe a GPU worker runs for `hptctl probe`, without a cluster.
//
//   hpt_probe --device=cuda:0 --preset=wind --batch=32
//   hpt_probe --device=cpu --preset=tiny --batch=16 --tokens=16 --steps=5
// Prints one line a baseline: its median step, energy a step where the
// GPU has a counter, or why it did not run. Exit codes: 0 every baseline
// ran or said why not, 2 bad flags, 3 the probe failed.
#include <cstdio>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/gpu_baseline.h"
#include "common/process_setup.h"
#include "models/model_config.h"
#include "workers/gpu/baseline_probe.h"
#include "workers/gpu/device_meter.h"

ABSL_FLAG(std::string, device, "cpu", "Device: cpu or cuda:N.");
ABSL_FLAG(std::string, preset, "wind", "Model preset (tiny, swe, weather, covid, wind).");
ABSL_FLAG(int64_t, batch, 1, "Samples a step.");
ABSL_FLAG(int64_t, tokens, 57, "Tokens a sample (wind: 57 stations).");
ABSL_FLAG(int64_t, input_steps, 12, "Input features a token (wind: 12 steps).");
ABSL_FLAG(int64_t, steps, 20, "Timed steps a baseline, after --warm_up.");
ABSL_FLAG(int64_t, warm_up, 3, "Untimed steps first.");

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  absl::SetProgramUsageMessage(
      "Times a preset's full training step under each GPU baseline (paper, fused, graph, "
      "bf16) on this device.\n  hpt_probe --device=cuda:0 --preset=wind --batch=32");
  absl::ParseCommandLine(argc, argv);
  hpt::KeepLargeBuffersOnTheHeap();  // as a worker's heap
  absl::StatusOr<hpt::ModelConfig> config = hpt::PresetModelConfig(absl::GetFlag(FLAGS_preset));
  if (!config.ok()) {
    std::cerr << "hpt_probe: --preset: " << config.status().message() << std::endl;
    return 2;
  }
  hpt::ProbeBaselinesRequest request;
  *request.mutable_model() = *config;
  request.mutable_model()->set_input_features(int32_t(absl::GetFlag(FLAGS_input_steps)));
  request.mutable_model()->set_output_features(1);
  request.set_batch(absl::GetFlag(FLAGS_batch));
  request.set_tokens(absl::GetFlag(FLAGS_tokens));
  request.set_steps(absl::GetFlag(FLAGS_steps));
  request.set_warm_up(absl::GetFlag(FLAGS_warm_up));
  const std::string device = absl::GetFlag(FLAGS_device);
  std::unique_ptr<hpt::DeviceMeter> meter;
  try {
    meter = hpt::DeviceMeter::Create(device);
  } catch (const std::exception& e) {
    std::cerr << "hpt_probe: --device '" << device << "': " << e.what() << std::endl;
    return 2;
  }
  absl::StatusOr<hpt::ProbeBaselinesResponse> r = hpt::ProbeBaselines(request, device, meter.get());
  if (!r.ok()) {
    std::cerr << "hpt_probe: " << r.status().message() << std::endl;
    return r.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 3;
  }
  std::printf("%s preset, batch %lld x %lld tokens, on %s (%s)\n", config->preset().c_str(),
              (long long)request.batch(), (long long)request.tokens(),
              meter->device_name().c_str(), meter->measured_by().c_str());
  for (const hpt::MeasuredBaseline& m : r->baselines()) {
    if (!m.not_run().empty()) {
      std::printf("  %-6s %s\n", hpt::GpuBaselineName(m.baseline()).c_str(), m.not_run().c_str());
    } else if (m.step_j() > 0) {
      std::printf("  %-6s %9.3f ms  %8.3f J a step  (%s)\n",
                  hpt::GpuBaselineName(m.baseline()).c_str(), 1e3 * m.step_s(), m.step_j(),
                  m.path().c_str());
    } else {
      std::printf("  %-6s %9.3f ms  (%s)\n", hpt::GpuBaselineName(m.baseline()).c_str(),
                  1e3 * m.step_s(), m.path().c_str());
    }
  }
  return 0;
}
