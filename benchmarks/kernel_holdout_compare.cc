#include "benchmarks/kernel_holdout_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hpt {

absl::StatusOr<MeasuredAs> ParseMeasuredAs(const std::string& text) {
  if (text == "graph") return MeasuredAs::kGraph;
  if (text == "kernel") return MeasuredAs::kKernel;
  if (text == "event") return MeasuredAs::kEvent;
  return absl::InvalidArgumentError(
      absl::StrCat("--measured_as '", text, "': want graph, kernel or event"));
}

double ModelSeconds(MeasuredAs as, const GpuSpec& gpu, const std::vector<GpuKernel>& kernels,
                    int reps) {
  switch (as) {
    case MeasuredAs::kKernel:
      return DeviceSeconds(gpu, GpuPrecision::kFp32, kernels);
    case MeasuredAs::kEvent:
      return IdleCallSeconds(gpu, GpuPrecision::kFp32, kernels);
    case MeasuredAs::kGraph:
      break;
  }
  reps = std::max(reps, 1);
  std::vector<GpuKernel> all;
  for (int i = 0; i < reps; ++i) all.insert(all.end(), kernels.begin(), kernels.end());
  return CostKernels(gpu, GpuPrecision::kFp32, all, GpuLaunch::kGraph).time_s / reps;
}

absl::StatusOr<std::vector<MeasuredCase>> ReadMeasured(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read --measured ", path));
  std::vector<MeasuredCase> measured;
  std::set<std::string> seen;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#' || absl::StartsWith(line, "class,")) continue;
    std::vector<std::string> f = absl::StrSplit(line, ',');
    double s = 0;
    if (f.size() < 4 || !absl::SimpleAtod(f[3], &s) || s <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " line ", n,
                       ": want class,case,reps,measured_s,ops with "
                       "measured_s > 0; re-measure with --measure_on"));
    }
    // A case of the list keeps its reps; another is parsed from its name.
    absl::StatusOr<HoldoutCase> c = ParseHoldoutCase(f[1]);
    for (const HoldoutCase& listed : HoldoutCases()) {
      if (listed.name == f[1]) c = listed;
    }
    if (!c.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " line ", n, ": ", c.status().message()));
    }
    if (!seen.insert(f[1]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " line ", n, ": case '", f[1],
                       "' again; give each case once (a median of repeats)"));
    }
    measured.push_back({*std::move(c), s});
  }
  return measured;
}

ClassError ErrorOf(const std::vector<double>& ratios) {
  if (ratios.empty()) return {};
  std::vector<double> err;
  double log_sum = 0;
  for (double x : ratios) {
    err.push_back(std::fabs(x - 1));
    log_sum += std::log(x);
  }
  std::sort(err.begin(), err.end());
  const size_t n = err.size();
  return {n % 2 ? err[n / 2] : 0.5 * (err[n / 2 - 1] + err[n / 2]), std::exp(log_sum / double(n))};
}

int PrintClassTable(const Ratios& ratios, const std::vector<std::string>& names, double tolerance) {
  std::printf("\nmedian |model / measured - 1| (geometric mean of model / measured)\n%-13s",
              "class");
  for (const std::string& name : names) std::printf(" %20s", name.substr(0, 20).c_str());
  std::printf("\n");
  int outside = 0;
  for (const auto& [cls, by_gpu] : ratios) {
    std::printf("%-13s", cls.c_str());
    for (const std::vector<double>& r : by_gpu) {
      const ClassError e = ErrorOf(r);
      const bool off = e.median > tolerance;
      outside += off ? 1 : 0;
      std::printf("       %5.0f %% (%5.2fx)%s", 100 * e.median, e.geometric_mean, off ? "*" : " ");
    }
    std::printf("\n");
  }
  std::printf("\n%d class-profile pairs above %.0f %% (*)\n", outside, 100 * tolerance);
  return outside;
}

}  // namespace hpt
