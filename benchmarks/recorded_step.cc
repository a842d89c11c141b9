#include "benchmarks/recorded_step.h"

#include <chrono>
#include <map>
#include <memory>

#include "models/lora.h"
#include "models/lora_config.h"
#include "workers/gpu/kernel_recorder.h"

namespace hpt {

StepCost RecordedStep::Cost(const DeviceCostConfig& config, GpuBaseline::Name baseline,
                            std::vector<StepCost>* tasks) const {
  StepCost total;
  for (const auto& [work, type] : {std::pair{&forward, "forward"}, std::pair{&backward, "backward"},
                                   std::pair{&update, "update"}}) {
    const CostReport c = CostTaskWork(*work, config, baseline, nullptr, type);
    total.time_s += c.simulated_s();
    total.energy_j += c.energy_j();
    const auto kernels = c.counters().find("kernels");
    const int64_t n = kernels == c.counters().end() ? 0 : int64_t(kernels->second);
    total.kernels += n;
    if (tasks != nullptr) tasks->push_back({c.simulated_s(), c.energy_j(), n});
  }
  return total;
}

void TrainStep(SpatioTemporalTransformer& model, torch::optim::Optimizer& optimizer,
               const torch::Tensor& x, const torch::Tensor& y, RecordedStep* record,
               StepTimes* times) {
  if (record != nullptr) *record = RecordedStep();
  using Clock = std::chrono::steady_clock;
  Clock::time_point mark = Clock::now();
  // The seconds since the last mark, into `*s` when timing.
  auto lap = [&](double StepTimes::*s) {
    const Clock::time_point now = Clock::now();
    if (times != nullptr) times->*s = std::chrono::duration<double>(now - mark).count();
    mark = now;
  };
  // Records from construction to the call, into `work`.
  auto recorder = [&] {
    return record != nullptr ? std::make_unique<KernelRecorder>() : nullptr;
  };
  auto finish = [](std::unique_ptr<KernelRecorder>& r, TaskWork* work) {
    if (r) AddKernels(r->Finish(), work);
  };
  std::unique_ptr<KernelRecorder> r = recorder();
  torch::Tensor loss = torch::mse_loss(model->forward(x), y);
  finish(r, record ? &record->forward : nullptr);
  optimizer.zero_grad();
  lap(&StepTimes::forward_s);
  r = recorder();
  loss.backward();
  finish(r, record ? &record->backward : nullptr);
  lap(&StepTimes::backward_s);
  r = recorder();
  optimizer.step();
  finish(r, record ? &record->update : nullptr);
  lap(&StepTimes::update_s);
  if (record == nullptr) return;
  for (const auto& group : optimizer.param_groups()) {
    for (const torch::Tensor& p : group.params()) record->update.add_optimizer_numel(p.numel());
  }
  const int64_t state_bytes = TrainingStateBytes(model);
  for (TaskWork* work : {&record->forward, &record->backward, &record->update}) {
    work->set_state_bytes(state_bytes);
  }
}

absl::StatusOr<ModelConfig> StepModelConfig(const std::string& preset) {
  absl::StatusOr<ModelConfig> config = PresetModelConfig(preset);
  if (!config.ok()) return config.status();
  config->set_input_features(kStepInputFeatures);
  config->set_output_features(1);
  return config;
}

absl::StatusOr<SpatioTemporalTransformer> StepModel(const StepCase& c, uint64_t seed) {
  absl::StatusOr<ModelConfig> config = StepModelConfig(c.preset);
  if (!config.ok()) return config.status();
  torch::manual_seed(seed);
  SpatioTemporalTransformer model(*config);
  if (c.lora) {
    LoraConfig l;
    l.set_enabled(true);
    l.set_rank(8);
    l.add_targets("q_proj");
    l.add_targets("v_proj");
    absl::StatusOr<std::map<std::string, int>> ranks = ApplyLora(model, LoraDefaults(l), {});
    if (!ranks.ok()) return ranks.status();
  }
  model->train();
  return model;
}

absl::StatusOr<RecordedStep> RecordStep(const StepCase& c, uint64_t seed) {
  absl::StatusOr<SpatioTemporalTransformer> model = StepModel(c, seed);
  if (!model.ok()) return model.status();
  std::vector<torch::Tensor> trainable;
  for (const torch::Tensor& p : (*model)->parameters()) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  torch::optim::Adam adam(trainable, torch::optim::AdamOptions(1e-3));
  const torch::Tensor x = torch::randn({c.batch, c.tokens, kStepInputFeatures});
  const torch::Tensor y = torch::randn({c.batch, c.tokens, 1});
  RecordedStep step;
  TrainStep(*model, adam, x, y);
  TrainStep(*model, adam, x, y, &step);
  return step;
}

}  // namespace hpt
