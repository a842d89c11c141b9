// The whole steps the GPU model is validated on stay out of the
// calibration's sample: no product any of them runs, forward, backward or
// update, is a shape hpt_calibrate times (workers/calibrate/calibration_shapes.h),
// in any layout. The calibration times no whole step at all, so the two
// sets of steps are disjoint by construction; this holds their kernels
// apart too.
#include <array>
#include <set>

#include "benchmarks/recorded_step.h"
#include "gtest/gtest.h"
#include "workers/calibrate/calibration_shapes.h"

namespace hpt {
namespace {

TEST(WholeStepHoldoutTest, NoValidationStepRunsACalibratedProduct) {
  const std::vector<std::array<int64_t, 3>> listed = CalibrationProducts();
  const std::set<std::array<int64_t, 3>> calibrated(listed.begin(), listed.end());
  ASSERT_GT(calibrated.size(), 700u);  // the full and quick grids and tables
  int products = 0;
  for (const StepCase& c : WholeStepValidationCases()) {
    absl::StatusOr<RecordedStep> step = RecordStep(c);
    ASSERT_TRUE(step.ok()) << step.status();
    for (const TaskWork* task : {&step->forward, &step->backward, &step->update}) {
      for (const GpuKernelWork& k : task->kernels()) {
        if (k.m() <= 0 || k.k() <= 0 || k.n() <= 0) continue;
        ++products;
        EXPECT_EQ(calibrated.count({k.m(), k.k(), k.n()}), 0u)
            << c.preset << " b" << c.batch << (c.lora ? " LoRA " : " full ") << k.op() << " "
            << k.m() << "x" << k.k() << "x" << k.n();
      }
    }
  }
  // Each step runs its projections, attention and head as products.
  EXPECT_GT(products, 4 * 20);
}

TEST(WholeStepHoldoutTest, TheCasesAreWindsAtBothBatchesFullAndLora) {
  const std::vector<StepCase> cases = WholeStepValidationCases();
  ASSERT_EQ(cases.size(), 4u);
  std::set<std::pair<int64_t, bool>> seen;
  for (const StepCase& c : cases) {
    EXPECT_EQ(c.preset, "wind");
    EXPECT_EQ(c.tokens, 57);
    seen.insert({c.batch, c.lora});
  }
  EXPECT_EQ(seen.size(), 4u);
}

}  // namespace
}  // namespace hpt
