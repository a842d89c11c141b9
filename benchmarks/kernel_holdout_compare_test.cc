// kernel_holdout's comparison without LibTorch: the three ways a measured
// time is priced, the CSV read back with its errors, and a class's error.
#include "benchmarks/kernel_holdout_compare.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace hpt {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(KernelHoldoutCompareTest, MeasuredAsNamesItsThreeWays) {
  EXPECT_EQ(*ParseMeasuredAs("graph"), MeasuredAs::kGraph);
  EXPECT_EQ(*ParseMeasuredAs("kernel"), MeasuredAs::kKernel);
  EXPECT_EQ(*ParseMeasuredAs("event"), MeasuredAs::kEvent);
  EXPECT_EQ(ParseMeasuredAs("wall").status().message(),
            "--measured_as 'wall': want graph, kernel or event");
}

// One 64 MB copy on the v100 preset: device time alone is its bytes at the
// achieved bandwidth; a graph of ten adds a node each and shares one
// launch; an idle call waits for Python's layer and one dispatch first.
TEST(KernelHoldoutCompareTest, EachWayPricesWhatItsTimeHolds) {
  const GpuSpec g = *GpuPreset("v100");
  const std::vector<GpuKernel> call = {{"aten::copy_", 0, 64e6}};
  const double device_s = 64e6 / (g.memory_bw * g.memory_share);
  EXPECT_NEAR(ModelSeconds(MeasuredAs::kKernel, g, call, 10), device_s, 1e-12);
  EXPECT_NEAR(ModelSeconds(MeasuredAs::kGraph, g, call, 10),
              device_s + g.graph_node_s + g.dispatch_s / 10, 1e-12);
  EXPECT_NEAR(ModelSeconds(MeasuredAs::kEvent, g, call, 10),
              g.python_op_s + g.dispatch_s + device_s, 1e-12);
}

TEST(KernelHoldoutCompareTest, ACsvReadsBackAndItsErrorsNameTheLine) {
  const std::string good = WriteFile(
      "good.csv",
      "# measured somewhere\nclass,case,reps,measured_s,ops\n"
      "softmax,sm 500x2000,20,7.5e-06,aten::_softmax\nlayer-norm,ln 8192x768,1,4e-5,published\n");
  absl::StatusOr<std::vector<MeasuredCase>> cases = ReadMeasured(good);
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].c.reps, 20);  // a listed case keeps its reps
  EXPECT_DOUBLE_EQ((*cases)[0].s, 7.5e-6);
  EXPECT_EQ((*cases)[1].c.kind, HoldoutClass::kLayerNorm);
  EXPECT_EQ((*cases)[1].c.dims[1], 768);

  const std::string twice =
      WriteFile("twice.csv", "add,add 1000,1,1e-6,x\nadd,add 1000,1,2e-6,x\n");
  EXPECT_EQ(ReadMeasured(twice).status().message(),
            twice + " line 2: case 'add 1000' again; give each case once (a median of repeats)");
  const std::string zero = WriteFile("zero.csv", "add,add 1000,1,0,x\n");
  EXPECT_EQ(ReadMeasured(zero).status().message(),
            zero +
                " line 1: want class,case,reps,measured_s,ops with measured_s > 0; "
                "re-measure with --measure_on");
  EXPECT_TRUE(absl::IsNotFound(ReadMeasured(good + ".missing").status()));
}

TEST(KernelHoldoutCompareTest, AClassErrorIsTheMedianAndTheGeometricMean) {
  const ClassError odd = ErrorOf({0.5, 1.1, 2.0});
  EXPECT_DOUBLE_EQ(odd.median, 0.5);  // |0.5-1|, |1.1-1|, |2-1|: 0.1, 0.5, 1
  EXPECT_NEAR(odd.geometric_mean, std::cbrt(0.5 * 1.1 * 2.0), 1e-12);
  EXPECT_NEAR(ErrorOf({0.9, 1.2}).median, 0.15, 1e-12);
  Ratios ratios;
  ratios["gemm"] = {{1.0, 1.05}, {0.5, 0.6}};
  EXPECT_EQ(PrintClassTable(ratios, {"near", "far"}, 0.15), 1);
}

}  // namespace
}  // namespace hpt
