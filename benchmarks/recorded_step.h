// One training step's GPU tasks (forward, MSE backward, optimizer update)
// as recorded work, and their cost on a device profile: what
// gpu_model_check and cpu_profile_check set beside measured steps.
// Includes LibTorch (benchmarks only).
//
//   RecordedStep step;
//   TrainStep(model, adam, x, y, &step);            // records the kernels
//   StepCost c = step.Cost(config, GpuBaseline::libtorch);
#ifndef HPT_BENCHMARKS_RECORDED_STEP_H_
#define HPT_BENCHMARKS_RECORDED_STEP_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/cost_settings.h"
#include "devices/work_cost.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "proto/work.pb.h"

namespace hpt {

// A training step's shape: a preset's model at batch x tokens, its full
// parameters or LoRA q,v at rank 8 (the frozen phase's).
struct StepCase {
  std::string preset;
  int64_t batch = 1, tokens = 1;
  bool lora = false;
};

struct StepCost {
  double time_s = 0, energy_j = 0;
  int64_t kernels = 0;  // the kernels priced (a GPU's; 0 on other devices)
};

// Wall seconds of each task of one step (the host's clock: a CPU step).
struct StepTimes {
  double forward_s = 0, backward_s = 0, update_s = 0;
  double total_s() const { return forward_s + backward_s + update_s; }
};

struct RecordedStep {
  TaskWork forward, backward, update;
  // The three tasks on `config` under `baseline`, each costed as its type
  // (`tasks`, if given: each one's cost, forward, backward, update).
  StepCost Cost(const DeviceCostConfig& config, GpuBaseline::Name baseline,
                std::vector<StepCost>* tasks = nullptr) const;
};

// One step of `model` on (x, y) with `optimizer`; with `record`, each
// task's kernels, the stepped parameters' sizes and the model's state go
// into it (replacing what it held); with `times`, each task's wall time.
void TrainStep(SpatioTemporalTransformer& model, torch::optim::Optimizer& optimizer,
               const torch::Tensor& x, const torch::Tensor& y, RecordedStep* record = nullptr,
               StepTimes* times = nullptr);

// Input features a token in the step checks' models: wind's 12 hours.
inline constexpr int64_t kStepInputFeatures = 12;

// A preset's model configuration as the step checks build it:
// kStepInputFeatures in, one output. INVALID_ARGUMENT for an unknown preset.
absl::StatusOr<ModelConfig> StepModelConfig(const std::string& preset);

// The whole steps the calibrated GPU model is checked on: gpu_model_check's
// measured table and its --measure_on defaults, wind's model at its 57
// stations, batch 1 and 32, full and LoRA. No product in them is a shape
// the calibration times (workers/calibrate/calibration_shapes.h), which
// whole_step_holdout_test shows.
inline std::vector<StepCase> WholeStepValidationCases() {
  std::vector<StepCase> out;
  for (bool lora : {false, true}) {
    for (int64_t batch : {1, 32}) out.push_back({"wind", batch, 57, lora});
  }
  return out;
}

// The case's model (StepModelConfig, LoRA where the case says), seeded
// with `seed`, in training mode.
absl::StatusOr<SpatioTemporalTransformer> StepModel(const StepCase& c, uint64_t seed);

// The case's second step (Adam's moments exist by then), recorded: a fresh
// seeded model, torch::optim::Adam over its trainable parameters, a random
// batch.
absl::StatusOr<RecordedStep> RecordStep(const StepCase& c, uint64_t seed = 1);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_RECORDED_STEP_H_
