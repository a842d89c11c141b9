#include "benchmarks/recorded_step.h"

#include <memory>

#include "workers/kernel_recorder.h"

namespace hpt {

StepCost RecordedStep::Cost(const DeviceCostConfig& config, GpuBaseline baseline) const {
  StepCost total;
  for (const auto& [work, type] : {std::pair{&forward, "forward"}, std::pair{&backward, "backward"},
                                   std::pair{&update, "update"}}) {
    const CostReport c = CostTaskWork(*work, config, baseline, nullptr, type);
    total.time_s += c.simulated_s();
    total.energy_j += c.energy_j();
  }
  return total;
}

void TrainStep(SpatioTemporalTransformer& model, torch::optim::Optimizer& optimizer,
               const torch::Tensor& x, const torch::Tensor& y, RecordedStep* record) {
  if (record != nullptr) *record = RecordedStep();
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
  r = recorder();
  loss.backward();
  finish(r, record ? &record->backward : nullptr);
  r = recorder();
  optimizer.step();
  finish(r, record ? &record->update : nullptr);
  if (record == nullptr) return;
  for (const auto& group : optimizer.param_groups()) {
    for (const torch::Tensor& p : group.params()) record->update.add_optimizer_numel(p.numel());
  }
}

}  // namespace hpt
