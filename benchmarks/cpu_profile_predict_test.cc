// The CPU profile check's arithmetic (PredictStep): a profile's prediction
// of recorded steps, with no timing, so it holds on any machine. Whether a
// CPU's own calibrated profile predicts the CPU's own steps is a timing
// comparison, and lives in the benchmark //benchmarks:cpu_profile_check
// (docs/cost-model.md records its figures): a shared 2-core machine's slow
// spells cannot fail CI through it.
#include <string>

#include "benchmarks/cpu_profile.h"
#include "benchmarks/recorded_step.h"
#include "devices/gpu/roofline.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

class CpuProfilePredictTest : public testing::Test {
 protected:
  static RecordedStep Record(const StepCase& c) {
    absl::StatusOr<RecordedStep> step = RecordStep(c, 1);
    EXPECT_TRUE(step.ok()) << step.status();
    return step.ok() ? *step : RecordedStep();
  }
  static GpuSpec Preset(const std::string& name) {
    absl::StatusOr<GpuSpec> spec = GpuPreset(name);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? *spec : GpuSpec();
  }
};

TEST_F(CpuProfilePredictTest, TheTasksAreTheRecordedStepsCostTaskByTask) {
  const RecordedStep step = Record({"tiny", 4, 16});
  const GpuSpec v100 = Preset("v100");
  const StepTimes predicted = PredictStep(v100, step);
  DeviceCostConfig config = DefaultDeviceCostConfig(DeviceKind::gpu);
  config.gpu = v100;
  std::vector<StepCost> tasks;
  const StepCost whole = step.Cost(config, GpuBaseline::libtorch, &tasks);
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_DOUBLE_EQ(predicted.forward_s, tasks[0].time_s);
  EXPECT_DOUBLE_EQ(predicted.backward_s, tasks[1].time_s);
  EXPECT_DOUBLE_EQ(predicted.update_s, tasks[2].time_s);
  EXPECT_NEAR(predicted.total_s(), whole.time_s, 1e-12 * whole.time_s);
  EXPECT_GT(predicted.forward_s, 0);
  EXPECT_GT(predicted.backward_s, 0);
  EXPECT_GT(predicted.update_s, 0);
}

TEST_F(CpuProfilePredictTest, TheSameShapeIsPredictedTheSameEveryTime) {
  const GpuSpec v100 = Preset("v100");
  const StepTimes a = PredictStep(v100, Record({"tiny", 4, 16}));
  const StepTimes b = PredictStep(v100, Record({"tiny", 4, 16}));
  EXPECT_DOUBLE_EQ(a.forward_s, b.forward_s);
  EXPECT_DOUBLE_EQ(a.backward_s, b.backward_s);
  EXPECT_DOUBLE_EQ(a.update_s, b.update_s);
}

// The v100 preset prices a tiny step by its launches; a device 10^4 times
// slower in compute and bandwidth prices it by its work.
GpuSpec WorkBound(GpuSpec spec) {
  spec.fp32_flops /= 1e4;
  spec.memory_bw /= 1e4;
  return spec;
}

TEST_F(CpuProfilePredictTest, MoreSamplesCostMoreButTheUpdateIsTheParameters) {
  // Forward and backward grow with the batch; Adam steps the same
  // parameters whatever the batch.
  const GpuSpec slow = WorkBound(Preset("v100"));
  const StepTimes small = PredictStep(slow, Record({"tiny", 4, 16}));
  const StepTimes large = PredictStep(slow, Record({"tiny", 64, 16}));
  EXPECT_GT(large.forward_s, 4 * small.forward_s);
  EXPECT_GT(large.backward_s, 4 * small.backward_s);
  EXPECT_DOUBLE_EQ(large.update_s, small.update_s);
}

TEST_F(CpuProfilePredictTest, ASlowerDeviceIsPredictedSlowerInEveryTask) {
  const RecordedStep step = Record({"tiny", 64, 16});
  const StepTimes fast = PredictStep(Preset("v100"), step);
  const StepTimes slow = PredictStep(WorkBound(Preset("v100")), step);
  EXPECT_GT(slow.forward_s, fast.forward_s);
  EXPECT_GT(slow.backward_s, fast.backward_s);
  EXPECT_GT(slow.update_s, fast.update_s);
}

TEST_F(CpuProfilePredictTest, AProfileReadBackFromItsTextPredictsTheSame) {
  // What hpt_calibrate writes and a worker reads (GpuProfileText,
  // ParseGpuProfile) carries everything the prediction uses.
  const GpuSpec v100 = Preset("v100");
  absl::StatusOr<GpuSpec> read = ParseGpuProfile(GpuProfileText(v100));
  ASSERT_TRUE(read.ok()) << read.status();
  const RecordedStep step = Record({"tiny", 64, 16});
  EXPECT_DOUBLE_EQ(PredictStep(*read, step).total_s(), PredictStep(v100, step).total_s());
}

TEST_F(CpuProfilePredictTest, TheCheckCoversBothPresetsAtTwoBatches) {
  // The benchmark's cases: what its recorded figures are figures of.
  const std::vector<StepCase> cases = CpuProfileCases();
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].preset, "tiny");
  EXPECT_EQ(cases[2].preset, "wind");
  EXPECT_NE(cases[0].batch, cases[1].batch);
  EXPECT_NE(cases[2].batch, cases[3].batch);
}

}  // namespace
}  // namespace hpt
