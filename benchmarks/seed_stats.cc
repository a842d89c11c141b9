#include "benchmarks/seed_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "coordinator/training/student_t.h"

namespace hpt {

SwitchStats SummarizeSwitches(const std::vector<int64_t>& steps) {
  SwitchStats s;
  s.seeds = int(steps.size());
  std::vector<int64_t> at;
  for (int64_t step : steps) {
    if (step < 0) {
      ++s.not_switched;
    } else {
      at.push_back(step);
    }
  }
  if (at.empty()) return s;
  std::sort(at.begin(), at.end());
  const size_t n = at.size();
  s.median = n % 2 == 1 ? double(at[n / 2]) : 0.5 * double(at[n / 2 - 1] + at[n / 2]);
  s.min = at.front();
  s.max = at.back();
  return s;
}

std::string FormatSwitches(const SwitchStats& s) {
  if (s.not_switched == s.seeds) return absl::StrCat("none in ", s.seeds, " seeds");
  std::string out = absl::StrCat("median ", s.median, ", range ", s.min, "-", s.max);
  if (s.not_switched > 0) {
    absl::StrAppend(&out, ", ", s.not_switched, " of ", s.seeds, " no switch");
  }
  return out;
}

Spread Summarize(const std::vector<double>& values) {
  Spread s;
  s.n = int(values.size());
  if (values.empty()) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.sd = s.n > 1 ? std::sqrt(sq / (s.n - 1)) : 0;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

PairedTest PairedGreaterTest(const std::vector<double>& a, const std::vector<double>& b) {
  PairedTest r;
  std::vector<double> d;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d.push_back(a[i] - b[i]);
  r.n = int(d.size());
  const Spread s = Summarize(d);
  r.mean_difference = s.mean;
  if (r.n < 2 || s.sd == 0) {
    r.t = s.mean > 0 ? std::numeric_limits<double>::infinity() : 0;
    r.p_one_sided = s.mean > 0 ? 0 : 1;
    return r;
  }
  r.t = s.mean / (s.sd / std::sqrt(double(r.n)));
  const double two_sided = StudentTwoSidedP(r.t, r.n - 1);
  r.p_one_sided = r.t > 0 ? two_sided / 2 : 1 - two_sided / 2;
  return r;
}

}  // namespace hpt
