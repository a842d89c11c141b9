// kernel_holdout's comparison, apart from recording and measuring (no
// LibTorch): what a measured CSV's times are, how the model prices a
// case's recorded kernels to set beside them, the CSV read back, and each
// class's median error.
//
//   absl::StatusOr<MeasuredAs> as = ParseMeasuredAs("event");
//   double s = ModelSeconds(*as, *GpuPreset("v100"), kernels, /*reps=*/1);
//   absl::StatusOr<std::vector<MeasuredCase>> cases = ReadMeasured("v100.csv");
#ifndef HPT_BENCHMARKS_KERNEL_HOLDOUT_COMPARE_H_
#define HPT_BENCHMARKS_KERNEL_HOLDOUT_COMPARE_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/kernel_holdout_cases.h"
#include "devices/gpu/kernel_cost.h"
#include "devices/gpu/roofline.h"

namespace hpt {

// What a measured CSV's times are (--measured_as):
//   graph   a call's share of a captured graph's replay (--measure_on);
//   kernel  each kernel's own device time, no graph node and no launch
//           (a profiler's kernel durations);
//   event   one call from Python on an idle GPU between two CUDA events,
//           the host's time to the first launch included (NeuSight's).
enum class MeasuredAs { kGraph, kKernel, kEvent };

// "graph", "kernel" or "event"; INVALID_ARGUMENT naming the fix otherwise.
absl::StatusOr<MeasuredAs> ParseMeasuredAs(const std::string& text);

// The model's seconds a call on `gpu`, priced as `as` says it was timed:
// graph, `reps` calls' kernels as one captured graph over `reps` (the
// graph's one launch shared as on the device); kernel, DeviceSeconds;
// event, IdleCallSeconds. fp32.
double ModelSeconds(MeasuredAs as, const GpuSpec& gpu, const std::vector<GpuKernel>& kernels,
                    int reps);

// A measured CSV's case and its seconds a call.
struct MeasuredCase {
  HoldoutCase c;
  double s = 0;
};
// The CSV's cases in its order (class,case,reps,measured_s,ops; '#' lines
// and the header skipped). A case of HoldoutCases() keeps its reps, any
// other is parsed from its name. An error names the file and line and the
// fix: an unparsable or repeated case, a time not above 0.
absl::StatusOr<std::vector<MeasuredCase>> ReadMeasured(const std::string& path);

// model / measured for each class, one list a profile.
using Ratios = std::map<std::string, std::vector<std::vector<double>>>;

// A class's median |ratio - 1| and the geometric mean of its ratios.
struct ClassError {
  double median = 0, geometric_mean = 0;
};
ClassError ErrorOf(const std::vector<double>& ratios);

// Prints each class's error a profile (names: the profiles' column heads),
// starring those above `tolerance`; returns how many are.
int PrintClassTable(const Ratios& ratios, const std::vector<std::string>& names, double tolerance);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_KERNEL_HOLDOUT_COMPARE_H_
