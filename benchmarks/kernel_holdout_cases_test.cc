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
    const int dims = DimsOf(c.op);
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

// A listed case's name says what it times: parsed, it is the same op on
// the same dims, so a measured set from elsewhere names cases the same way.
TEST(KernelHoldoutCasesTest, EveryNameParsesToItsOwnCase) {
  for (const HoldoutCase& c : HoldoutCases()) {
    absl::StatusOr<HoldoutCase> parsed = ParseHoldoutCase(c.name);
    ASSERT_TRUE(parsed.ok()) << c.name << ": " << parsed.status();
    EXPECT_EQ(parsed->kind, c.kind) << c.name;
    EXPECT_EQ(parsed->op, c.op) << c.name;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(parsed->dims[i], c.dims[i]) << c.name;
    EXPECT_EQ(parsed->reps, 1);
  }
}

// A linear layer's case: rows, in, out (x of rows x in by W of out x in).
TEST(KernelHoldoutCasesTest, ALinearLayersCaseParses) {
  absl::StatusOr<HoldoutCase> c = ParseHoldoutCase("linear 8192x768x3072");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, HoldoutClass::kGemm);
  EXPECT_EQ(c->op, HoldoutOp::kLinear);
  EXPECT_EQ(c->dims[0], 8192);
  EXPECT_EQ(c->dims[1], 768);
  EXPECT_EQ(c->dims[2], 3072);
  EXPECT_EQ(ParseHoldoutCase("linear 8x8").status().message(),
            "case 'linear 8x8': linear takes 3 dims, got 2");
}

// Every element-wise op takes one dim, its elements, and is of the
// element-wise class.
TEST(KernelHoldoutCasesTest, EveryElementwiseOpParses) {
  for (const char* op : {"add", "mul", "div", "pow", "add-s", "mul-s", "div-s", "pow-s", "mul_",
                         "relu", "tanh", "gelu"}) {
    absl::StatusOr<HoldoutCase> c = ParseHoldoutCase(absl::StrCat(op, " 1000"));
    ASSERT_TRUE(c.ok()) << op << ": " << c.status();
    EXPECT_EQ(c->kind, HoldoutClass::kElementwise) << op;
    EXPECT_EQ(c->dims[0], 1000) << op;
    EXPECT_EQ(ParseHoldoutCase(absl::StrCat(op, " 10x10")).status().message(),
              absl::StrCat("case '", op, " 10x10': ", op, " takes 1 dims, got 2"));
  }
}

TEST(KernelHoldoutCasesTest, ANameThatDoesNotParseSaysWhy) {
  EXPECT_EQ(
      ParseHoldoutCase("conv 3x3").status().message(),
      "case 'conv 3x3': want an op (mm, linear, bmm, ln, ln-bwd, sm, sm-bwd, add, mul, div, pow, "
      "add-s, mul-s, div-s, pow-s, mul_, relu, tanh, gelu), a space, then its dims joined by x");
  EXPECT_EQ(ParseHoldoutCase("bmm 4x8x8").status().message(),
            "case 'bmm 4x8x8': bmm takes 4 dims, got 3");
  EXPECT_EQ(ParseHoldoutCase("add 0").status().message(),
            "case 'add 0': dim '0' is not a whole number >= 1");
  EXPECT_EQ(ParseHoldoutCase("sm 8xten").status().message(),
            "case 'sm 8xten': dim 'ten' is not a whole number >= 1");
}

}  // namespace
}  // namespace hpt
