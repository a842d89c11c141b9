// cpu_profile_check: the CPU's own calibrated profile against the CPU's own
// whole training steps (benchmarks/cpu_profile.h), task by task.
//
//   bazel run -c opt //benchmarks:cpu_profile_check -- [--check] [--rounds=3] [--quick]
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/cpu_profile.h"
#include "common/process_setup.h"

ABSL_FLAG(bool, quick, true, "Calibrate quickly (seconds).");
ABSL_FLAG(int, rounds, 3, "Rounds of calibration and steps; each side keeps its least.");
ABSL_FLAG(int, max_rounds, 6, "Rounds at most, while a step is outside 0.75-1.25.");
ABSL_FLAG(bool, check, false, "Exit 1 when a ratio is outside 0.75-1.25.");

namespace hpt {
namespace {

int Main() {
  CpuProfileOptions options;
  options.quick = absl::GetFlag(FLAGS_quick);
  options.rounds = absl::GetFlag(FLAGS_rounds);
  options.max_rounds = absl::GetFlag(FLAGS_max_rounds);
  absl::StatusOr<CpuProfileCheck> check = CheckCpuProfile(options);
  if (!check.ok()) {
    std::fprintf(stderr, "cpu_profile_check: %s\n", std::string(check.status().message()).c_str());
    return 2;
  }
  std::printf("%s\n%d rounds\n", GpuProfileText(check->profile).c_str(), check->rounds);
  int outside = 0;
  for (const StepCheck& s : check->steps) {
    const bool off = !s.within(options.tolerance);
    outside += off ? 1 : 0;
    std::printf("%-5s batch %-3lld measured %8.2f ms  predicted %8.2f ms  ratio %.2f%s\n",
                s.shape.preset.c_str(), static_cast<long long>(s.shape.batch),
                1e3 * s.measured.total_s(), 1e3 * s.predicted.total_s(), s.ratio(),
                off ? "  outside" : "");
    std::printf("      forward %.2f / %.2f ms, backward %.2f / %.2f ms, update %.2f / %.2f ms\n",
                1e3 * s.measured.forward_s, 1e3 * s.predicted.forward_s,
                1e3 * s.measured.backward_s, 1e3 * s.predicted.backward_s,
                1e3 * s.measured.update_s, 1e3 * s.predicted.update_s);
  }
  return absl::GetFlag(FLAGS_check) && outside > 0 ? 1 : 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  // Steps and calibration run as a worker runs them (workers/main/worker_main.cc).
  hpt::UseShortThreadSpins(argv);
  hpt::KeepLargeBuffersOnTheHeap();
  absl::ParseCommandLine(argc, argv);
  return hpt::Main();
}
