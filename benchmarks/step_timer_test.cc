#include "benchmarks/step_timer.h"

#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

// An update at `step` in `phase` after `epochs` closed epochs, with the
// GPU's tasks measured at `gpu_s` so far.
TrainerUpdate At(int64_t step, TrainingPhase::Name phase, int epochs, double gpu_s,
                 const std::string& evaluating = "") {
  TrainerUpdate u;
  u.progress.set_step(step);
  u.progress.set_evaluating(evaluating);
  u.hpt.set_phase(phase);
  u.epoch_losses.assign(epochs, 1.0);
  DeviceCost& gpu = u.device_costs.emplace_back();
  gpu.set_kind(DeviceKind::gpu);
  gpu.mutable_cost()->set_measured_s(gpu_s);
  return u;
}

TEST(StepTimer, ARunOfStepsCountsForEachOfItsSteps) {
  StepTimer timer(0);
  timer.Observe(At(0, TrainingPhase::full, 0, 0), 1.0);    // the model is loaded
  timer.Observe(At(4, TrainingPhase::full, 0, 2.0), 3.0);  // a run of 4 steps in 2 s
  timer.Observe(At(6, TrainingPhase::full, 0, 2.5), 3.5);  // a run of 2 in 0.5 s
  const StepTimer::Totals full = timer.PhaseTotals(TrainingPhase::full);
  EXPECT_EQ(full.steps(), 6);
  EXPECT_DOUBLE_EQ(full.wall_s, 2.5);
  EXPECT_DOUBLE_EQ(full.compute_s.at(DeviceKind::gpu), 2.5);
  EXPECT_EQ(full.step_s, (std::vector<double>{0.5, 0.5, 0.5, 0.5, 0.25, 0.25}));
  EXPECT_DOUBLE_EQ(full.median_step_s(), 0.5);
  EXPECT_EQ(timer.PhaseTotals(TrainingPhase::lora).steps(), 0);
}

TEST(StepTimer, TheSwitchingRunIsNotCountedAndLoraIsItsOwn) {
  StepTimer timer(0);
  timer.Observe(At(0, TrainingPhase::full, 0, 0), 0.5);
  timer.Observe(At(2, TrainingPhase::full, 0, 1.0), 1.5);
  timer.Observe(At(4, TrainingPhase::lora, 0, 1.0), 9.0);  // switched: 7.5 s not a step's
  timer.Observe(At(5, TrainingPhase::lora, 0, 1.0), 9.5);
  timer.Observe(At(6, TrainingPhase::lora, 0, 1.0), 10.0);
  EXPECT_EQ(timer.PhaseTotals(TrainingPhase::full).steps(), 2);
  EXPECT_DOUBLE_EQ(timer.PhaseTotals(TrainingPhase::full).wall_s, 1.0);
  const StepTimer::Totals lora = timer.PhaseTotals(TrainingPhase::lora);
  EXPECT_EQ(lora.steps(), 2);
  EXPECT_DOUBLE_EQ(lora.wall_s, 1.0);
  EXPECT_EQ(lora.step_s, (std::vector<double>{0.5, 0.5}));
  StepTimer::Totals four;
  four.step_s = {3.0, 0.25, 1.0, 0.5};
  EXPECT_DOUBLE_EQ(four.median_step_s(), 0.75);
  EXPECT_EQ(StepTimer::Totals{}.median_step_s(), 0);
}

TEST(StepTimer, TheEvaluationSpansItsProgressUpdatesAndIsNoStep) {
  StepTimer timer(0);
  timer.Observe(At(0, TrainingPhase::full, 0, 0), 0.0);
  timer.Observe(At(4, TrainingPhase::full, 0, 1.0), 2.0);
  // The epoch closes: its loss is in before the splits are evaluated, and
  // progress comes while they are.
  timer.Observe(At(4, TrainingPhase::full, 1, 1.0, "the test split: 0 of 9 samples"), 2.1);
  timer.Observe(At(4, TrainingPhase::full, 1, 1.5, "the test split: 5 of 9 samples"), 3.5);
  timer.Observe(At(4, TrainingPhase::full, 1, 2.0), 5.0);  // the epoch's report
  timer.Observe(At(8, TrainingPhase::full, 1, 3.0), 7.0);  // the next epoch's first run
  EXPECT_DOUBLE_EQ(timer.eval_s(), 3.0);
  EXPECT_EQ(timer.eval_phase(), TrainingPhase::full);
  const StepTimer::Totals full = timer.PhaseTotals(TrainingPhase::full);
  EXPECT_EQ(full.steps(), 8);
  EXPECT_DOUBLE_EQ(full.wall_s, 4.0);
  EXPECT_DOUBLE_EQ(full.compute_s.at(DeviceKind::gpu),
                   2.0);  // the evaluation's 1 s is not a step's
}

}  // namespace
}  // namespace hpt
