// The CPU profile check's rounds (RunCpuProfileRounds) on scripted rounds:
// how many run, and that each side keeps its least. No timing.
#include <vector>

#include "benchmarks/cpu_profile.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

// A round whose one step measured `measured_s` (forward only) against a
// prediction of `predicted_s`.
CpuProfileCheck Round(double measured_s, double predicted_s) {
  CpuProfileCheck c;
  StepCheck s;
  s.shape = {"tiny", 64, 16};
  s.measured = {measured_s, 0, 0};
  s.predicted = {predicted_s, 0, 0};
  c.steps = {s};
  return c;
}

// Rounds served from `script` in order; `calls` counts them.
CpuProfileRound Scripted(const std::vector<CpuProfileCheck>& script, int* calls) {
  return [script, calls]() -> absl::StatusOr<CpuProfileCheck> {
    return script[size_t((*calls)++) % script.size()];
  };
}

TEST(CpuProfileRoundsTest, StopsAfterTheRoundsAskedForWhenAllAreWithin) {
  int calls = 0;
  absl::StatusOr<CpuProfileCheck> c =
      RunCpuProfileRounds(CpuProfileOptions(), Scripted({Round(1.0, 0.9)}, &calls));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(c->rounds, 3);
  EXPECT_DOUBLE_EQ(c->steps[0].ratio(), 0.9);
}

TEST(CpuProfileRoundsTest, ASlowSpellGetsMoreRoundsAndTheLeastStands) {
  // Three disturbed measurements (ratio 0.6), then an undisturbed one.
  int calls = 0;
  absl::StatusOr<CpuProfileCheck> c = RunCpuProfileRounds(
      CpuProfileOptions(),
      Scripted({Round(1.5, 0.9), Round(1.5, 1.0), Round(1.6, 0.95), Round(1.0, 0.92),
                Round(1.2, 0.9)},
               &calls));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rounds, 4);
  EXPECT_DOUBLE_EQ(c->steps[0].measured.forward_s, 1.0);
  EXPECT_DOUBLE_EQ(c->steps[0].predicted.forward_s, 0.9);
}

TEST(CpuProfileRoundsTest, AModelThatIsWrongStaysOutsideAfterMaxRounds) {
  int calls = 0;
  absl::StatusOr<CpuProfileCheck> c =
      RunCpuProfileRounds(CpuProfileOptions(), Scripted({Round(1.0, 0.5)}, &calls));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rounds, 6);
  EXPECT_EQ(calls, 6);
  EXPECT_FALSE(c->steps[0].within(0.25));
}

TEST(CpuProfileRoundsTest, AFailedRoundStopsTheCheck) {
  CpuProfileRound fails = []() -> absl::StatusOr<CpuProfileCheck> {
    return absl::FailedPreconditionError("device cuda:0: no CUDA here");
  };
  absl::StatusOr<CpuProfileCheck> c = RunCpuProfileRounds(CpuProfileOptions(), fails);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace hpt
