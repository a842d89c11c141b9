#include "benchmarks/cpu_profile.h"

#include <torch/torch.h>

#include <algorithm>
#include <memory>

#include "devices/cost_settings.h"
#include "devices/work_cost.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "workers/calibrate/device_calibration.h"

namespace hpt {
namespace {

// Each task's least over `a` and `b`.
StepTimes Least(const StepTimes& a, const StepTimes& b) {
  return {std::min(a.forward_s, b.forward_s), std::min(a.backward_s, b.backward_s),
          std::min(a.update_s, b.update_s)};
}

// One shape of a round: its model, optimizer and batch, the kernels one
// step records, and the least of each task's timed samples so far.
struct ShapeRun {
  explicit ShapeRun(const StepCase& c)
      : model(*StepModel(c, 3)),
        adam(model->parameters(), torch::optim::AdamOptions(1e-3)),
        x(torch::randn({c.batch, c.tokens, kStepInputFeatures})),
        y(torch::randn({c.batch, c.tokens, 1})) {
    check.shape = c;
    TrainStep(model, adam, x, y);  // Adam's moments
    TrainStep(model, adam, x, y, &recorded);
  }
  // One sample: a step to bring the shape's own operands back into the
  // caches, then a timed one.
  void Sample() {
    TrainStep(model, adam, x, y);
    StepTimes t;
    TrainStep(model, adam, x, y, nullptr, &t);
    check.measured = samples++ == 0 ? t : Least(check.measured, t);
  }
  SpatioTemporalTransformer model;
  torch::optim::Adam adam;
  torch::Tensor x, y;
  RecordedStep recorded;
  StepCheck check;
  int samples = 0;
};

// One round's steps: `steps` samples of each shape, taken in turn, so a
// shape's samples are spread over the whole of the round's seconds and a
// slow spell of the machine (seconds, against a small step's 2 ms) cannot
// cover all of one shape's samples while sparing the rest.
std::vector<StepCheck> MeasureAndPredict(const GpuSpec& profile,
                                         const std::vector<StepCase>& cases, int steps) {
  std::vector<std::unique_ptr<ShapeRun>> runs;
  for (const StepCase& c : cases) runs.push_back(std::make_unique<ShapeRun>(c));
  for (int i = 0; i < steps; ++i) {
    for (auto& run : runs) run->Sample();
  }
  std::vector<StepCheck> checks;
  for (auto& run : runs) {
    run->check.predicted = PredictStep(profile, run->recorded);
    checks.push_back(run->check);
  }
  return checks;
}

}  // namespace

StepTimes PredictStep(const GpuSpec& profile, const RecordedStep& recorded) {
  DeviceCostConfig cost = DefaultDeviceCostConfig(DeviceKind::gpu);
  cost.gpu = profile;
  std::vector<StepCost> tasks;
  recorded.Cost(cost, GpuBaseline::libtorch, &tasks);
  return {tasks[0].time_s, tasks[1].time_s, tasks[2].time_s};
}

std::vector<StepCase> CpuProfileCases() {
  return {{"tiny", 4, 16}, {"tiny", 64, 16}, {"wind", 1, 57}, {"wind", 8, 57}};
}

absl::StatusOr<CpuProfileCheck> RunCpuProfileRounds(const CpuProfileOptions& options,
                                                    const CpuProfileRound& round) {
  CpuProfileCheck result;
  auto all_within = [&] {
    return std::all_of(result.steps.begin(), result.steps.end(),
                       [&](const StepCheck& s) { return s.within(options.tolerance); });
  };
  const int rounds = std::max(options.rounds, 1);
  for (int r = 0; r < std::max(rounds, options.max_rounds); ++r) {
    if (r >= rounds && all_within()) break;
    absl::StatusOr<CpuProfileCheck> one = round();
    if (!one.ok()) return one.status();
    result.rounds = r + 1;
    result.profile = one->profile;
    if (r == 0) {
      result.steps = one->steps;
      continue;
    }
    for (size_t i = 0; i < result.steps.size() && i < one->steps.size(); ++i) {
      StepCheck& kept = result.steps[i];
      kept.measured = Least(kept.measured, one->steps[i].measured);
      kept.predicted = Least(kept.predicted, one->steps[i].predicted);
    }
  }
  return result;
}

absl::StatusOr<CpuProfileCheck> CheckCpuProfile(const CpuProfileOptions& options) {
  return RunCpuProfileRounds(options, [&]() -> absl::StatusOr<CpuProfileCheck> {
    CalibrationOptions calibration;
    calibration.quick = options.quick;
    absl::StatusOr<GpuSpec> profile = CalibrateDevice(calibration);
    if (!profile.ok()) return profile.status();
    CpuProfileCheck one;
    one.profile = *profile;
    one.steps = MeasureAndPredict(*profile, options.cases, options.steps);
    return one;
  });
}

}  // namespace hpt
