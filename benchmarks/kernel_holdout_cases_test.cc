// The held-out kernels stay out of the calibration's sample: no shape is a
// point of hpt_calibrate's power-of-two grids and no product is the wind
// model's; every class has cases and names are keys.
#include "benchmarks/kernel_holdout_cases.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace hpt {
namespace {

bool PowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

TEST(KernelHoldoutCasesTest, NoShapeIsAPointOfTheCalibrationGrids) {
  for (const HoldoutCase& c : HoldoutCases()) {
    const bool batched = c.op == HoldoutOp::kBmm;
    const int dims = c.op == HoldoutOp::kMm                  ? 3
                     : batched                              ? 4
                     : c.kind == HoldoutClass::kElementwise ? 1
                                                            : 2;
    // The grids' points have every dimension a power of two; a batch is
    // no grid's axis.
    bool off_grid = false;
    for (int i = batched ? 1 : 0; i < dims; ++i) off_grid = off_grid || !PowerOfTwo(c.dims[i]);
    EXPECT_TRUE(off_grid) << c.name;
    if (c.op == HoldoutOp::kMm) {
      EXPECT_FALSE(c.dims[0] == 57 && c.dims[1] == 512 && c.dims[2] == 1536)
          << c.name << ": the wind model's projection";
      EXPECT_FALSE(c.dims[0] == 512 && c.dims[1] == 57 && c.dims[2] == 1536)
          << c.name << ": the wind model's weight gradient";
    }
  }
}

TEST(KernelHoldoutCasesTest, EveryClassHasCasesAndNamesAreUnique) {
  std::set<std::string> names;
  std::set<HoldoutClass> classes;
  for (const HoldoutCase& c : HoldoutCases()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    classes.insert(c.kind);
    EXPECT_GE(c.reps, 1) << c.name;
  }
  EXPECT_EQ(classes.size(), 5u);
}

}  // namespace
}  // namespace hpt
