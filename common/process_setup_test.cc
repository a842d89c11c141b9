// UseShortThreadSpins in a real child process: what it sets, that it
// re-executes once, and that values the user set stand.
#include <string>

#include "common/test_util.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

std::string Probe(const std::string& env) {
  testing::CommandResult r = testing::RunCommand(
      "env -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT -u OMP_WAIT_POLICY -u HPT_PROBE_RUNS " +
      env + " " + testing::RunfilePath("common/process_setup_probe"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

TEST(UseShortThreadSpinsTest, SetsBothAndReExecutesOnce) {
  EXPECT_EQ(Probe(""), "GOMP_SPINCOUNT=10000 OPENBLAS_THREAD_TIMEOUT=4 runs=2\n");
}

TEST(UseShortThreadSpinsTest, KeepsWhatTheUserSet) {
  EXPECT_EQ(Probe("GOMP_SPINCOUNT=77 OPENBLAS_THREAD_TIMEOUT=9"),
            "GOMP_SPINCOUNT=77 OPENBLAS_THREAD_TIMEOUT=9 runs=1\n");
}

TEST(UseShortThreadSpinsTest, AWaitPolicyTheUserChoseLeavesTheSpinCountAlone) {
  EXPECT_EQ(Probe("OMP_WAIT_POLICY=passive"),
            "GOMP_SPINCOUNT=unset OPENBLAS_THREAD_TIMEOUT=4 runs=2\n");
}

}  // namespace
}  // namespace hpt
