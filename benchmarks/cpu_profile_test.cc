// The CPU's calibrated profile predicts the CPU's own whole training steps
// within 25 % (issue 32), task sums of the tiny and wind presets at two
// batches each. Both sides are timed in this process (a ratio, no
// absolute time is asserted); the test is tagged exclusive so no other
// test shares the cores while it times.
//
// Session 18 on the 2-core CI machine (AMD EPYC VM, torch 2.12.1 CPU),
// `bazel run -c opt //benchmarks:cpu_profile_check`, model / measured:
// tiny b4 0.99, tiny b64 0.93-0.94, wind b1 0.85-0.88, wind b8 0.91-0.93;
// fastbuild under `bazel test`, 54 s. Session 19 on a second machine type
// (Intel Xeon with AMX, KVM, 2 vCPUs, sysfs L3 480 MiB): wind b1 0.71
// before the calibration measured the cache's knee and kept the stream
// pool's place (workers/device_calibration.h), then tiny b4 0.85-0.86,
// tiny b64 0.80-0.81, wind b1 0.84, wind b8 0.81-0.83; 27 s. Session 20
// on a third (AMD EPYC family 26, 2 vCPUs, L3 32 MiB): 0.94-1.06 run
// alone, but tiny b64 0.72 in CI after the build, its steps 1.4x their
// usual time and the calibration not: glibc trimmed and re-faulted the
// heap every step (54 faults) and faults had grown costly. The test now
// runs as a worker runs, with its heap policy and thread spins
// (common/process_setup.h): tiny b4 0.98-1.03, tiny b64 0.96-0.97, wind b1
// 0.99-1.00, wind b8 0.94-0.97; and it takes more rounds, up to 6, while a
// step is outside (benchmarks/cpu_profile.h). Session 22, the Intel VM
// again: tiny b64 at 0.70-0.72 (outside) until the recorder kept the ops
// that fill their outputs first (sum, layer norm's backward), the GEMM
// grids were timed with their first operand just written by another op
// and layer norm got its own grids (docs/cost-model.md); then tiny b4
// 0.87-0.96, tiny b64 0.85-0.90, wind b1 0.91-0.96, wind b8 0.82-0.87.
// Session 31, an Intel VM whose host has 1-3 s spells of doubled dispatch:
// tiny b4 at 0.66-0.80 (outside twice in .ci/run) while its seven samples
// were taken inside 20 ms; with each shape's samples taken in turn across
// the round, 1.19/1.10/1.14/0.99 and 1.09/1.07/1.08/1.19 here.
#include "benchmarks/cpu_profile.h"

#include <cstdio>

#include "common/process_setup.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(CpuProfileTest, PredictsTheCpusOwnStepsWithin25Percent) {
  absl::StatusOr<CpuProfileCheck> check = CheckCpuProfile(CpuProfileOptions());
  ASSERT_TRUE(check.ok()) << check.status();
  // What the prediction rests on was measured, not defaulted.
  EXPECT_TRUE(check->profile.synchronous);
  EXPECT_GT(check->profile.dispatch_s, 0);
  EXPECT_FALSE(check->profile.gemm_grid.empty());
  EXPECT_FALSE(check->profile.attention_grid.empty());
  ASSERT_EQ(check->steps.size(), 4u);
  std::printf("%d rounds\n", check->rounds);
  for (const StepCheck& s : check->steps) {
    SCOPED_TRACE(s.shape.preset + " batch " + std::to_string(s.shape.batch));
    std::printf("%-5s batch %-3d predicted / measured %.2f\n", s.shape.preset.c_str(),
                int(s.shape.batch), s.ratio());
    EXPECT_GT(s.measured.forward_s, 0);
    EXPECT_GT(s.predicted.update_s, 0);
    EXPECT_NEAR(s.ratio(), 1.0, 0.25)
        << "measured " << 1e3 * s.measured.total_s() << " ms (forward "
        << 1e3 * s.measured.forward_s << ", backward " << 1e3 * s.measured.backward_s
        << ", update " << 1e3 * s.measured.update_s << "), predicted "
        << 1e3 * s.predicted.total_s() << " ms (forward " << 1e3 * s.predicted.forward_s
        << ", backward " << 1e3 * s.predicted.backward_s << ", update "
        << 1e3 * s.predicted.update_s << ")";
  }
}

}  // namespace
}  // namespace hpt

// Steps and calibration run as a worker runs them (workers/worker_main.cc).
int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  hpt::KeepLargeBuffersOnTheHeap();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
