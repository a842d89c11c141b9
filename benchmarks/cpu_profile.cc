#include "benchmarks/cpu_profile.h"

#include <torch/torch.h>

#include <algorithm>

#include "devices/cost_settings.h"
#include "devices/work_cost.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "workers/device_calibration.h"

namespace hpt {
namespace {

// Each task's least over `a` and `b`.
StepTimes Least(const StepTimes& a, const StepTimes& b) {
  return {std::min(a.forward_s, b.forward_s), std::min(a.backward_s, b.backward_s),
          std::min(a.update_s, b.update_s)};
}

// One round for one shape: the step's tasks timed `steps` times (each
// task's least) and `profile`'s prediction of them.
StepCheck MeasureAndPredict(const GpuSpec& profile, const StepCase& c, int steps) {
  SpatioTemporalTransformer model = *StepModel(c, 3);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  torch::Tensor x = torch::randn({c.batch, c.tokens, kStepInputFeatures});
  torch::Tensor y = torch::randn({c.batch, c.tokens, 1});
  RecordedStep recorded;
  TrainStep(model, adam, x, y);  // Adam's moments
  TrainStep(model, adam, x, y, &recorded);
  StepCheck check;
  check.shape = c;
  for (int i = 0; i < steps; ++i) {
    StepTimes t;
    TrainStep(model, adam, x, y, nullptr, &t);
    check.measured = i == 0 ? t : Least(check.measured, t);
  }
  DeviceCostConfig cost = DefaultDeviceCostConfig("gpu");
  cost.gpu = profile;
  std::vector<StepCost> tasks;
  recorded.Cost(cost, GpuBaseline::kLibtorch, &tasks);
  check.predicted = {tasks[0].time_s, tasks[1].time_s, tasks[2].time_s};
  return check;
}

}  // namespace

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
    for (const StepCase& c : options.cases) {
      one.steps.push_back(MeasureAndPredict(*profile, c, options.steps));
    }
    return one;
  });
}

}  // namespace hpt
