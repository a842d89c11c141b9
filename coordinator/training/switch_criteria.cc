#include "coordinator/training/switch_criteria.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "coordinator/training/student_t.h"

namespace hpt {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Percent(double fraction) { return absl::StrFormat("%.3g %%", fraction * 100); }

}  // namespace

TestOutcome ThreePointOutcome(const double v[3], double threshold, const std::string& what) {
  TestOutcome out;
  if (!(v[0] > 0) || !(v[1] > 0) || !(threshold > 0)) {
    out.margin = kInf;
    out.detail = what + ": not a positive series";
    return out;
  }
  const double drop01 = v[0] - v[1], drop12 = v[1] - v[2];
  const double first = drop01 / v[0] / threshold, second = drop12 / v[1] / threshold;
  // The ordering condition drop12 < drop01 as a ratio that is below 1
  // exactly when it holds.
  double order;
  if (drop01 > 0) {
    order = drop12 / drop01;
  } else {
    order = drop12 < drop01 ? 0 : 1 + (drop12 - drop01) / v[1];
  }
  out.margin = std::max({first, second, order});
  out.passed = out.margin < 1;
  if (out.margin == first) {
    out.detail = absl::StrFormat("%s: first drop %s (bound %s)", what, Percent(drop01 / v[0]),
                                 Percent(threshold));
  } else if (out.margin == second) {
    out.detail = absl::StrFormat("%s: second drop %s (bound %s)", what, Percent(drop12 / v[1]),
                                 Percent(threshold));
  } else {
    out.detail = absl::StrFormat("%s: second drop %.4g %s the first %.4g", what, drop12,
                                 out.passed ? "below" : "not below", drop01);
  }
  return out;
}

TestOutcome TrendOutcome(const std::vector<double>& losses, double windows_left, double gain) {
  TestOutcome out;
  const size_t m = losses.size();
  if (m < 3 || !(gain > 0)) {
    out.margin = kInf;
    out.detail = "trend: fewer than 3 windows";
    return out;
  }
  double x_mean = (double(m) - 1) / 2, y_mean = 0;
  for (double y : losses) y_mean += y / double(m);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < m; ++i) {
    sxx += (double(i) - x_mean) * (double(i) - x_mean);
    sxy += (double(i) - x_mean) * (losses[i] - y_mean);
  }
  const double slope = sxy / sxx;
  double sse = 0;
  for (size_t i = 0; i < m; ++i) {
    const double r = losses[i] - (y_mean + slope * (double(i) - x_mean));
    sse += r * r;
  }
  const double se = std::sqrt(sse / double(m - 2) / sxx);
  const double level = y_mean + slope * (double(m) - 1 - x_mean);  // the line at the last window
  // The fastest fall per window the data allow (one-sided 95 %).
  const double fall = -slope + StudentQuantile(0.95, double(m - 2)) * se;
  if (!(level > 0)) {
    out.margin = kInf;
    out.detail = "trend: the fitted loss is not positive";
    return out;
  }
  const double to_gain = std::max(0.0, fall) * std::max(0.0, windows_left) / level;
  out.margin = to_gain / gain;
  out.passed = out.margin < 1;
  out.detail = absl::StrFormat(
      "trend: at most %s of the loss left to gain over the %.0f windows to the end (95 %% "
      "bound of the fall over the last %d windows; bound %s)",
      Percent(to_gain), windows_left, int(m), Percent(gain));
  return out;
}

TestOutcome PlateauOutcome(const WindowMoments& before, const WindowMoments& last, double z) {
  TestOutcome out;
  if (before.n < 2 || last.n < 2 || !(z > 0)) {
    out.margin = kInf;
    out.detail = "plateau: windows of fewer than 2 steps";
    return out;
  }
  const double drop = before.mean - last.mean;
  const double se = std::sqrt(before.variance / double(before.n) + last.variance / double(last.n));
  const double z_drop = se > 0 ? drop / se : (drop > 0 ? kInf : 0);
  out.margin = z_drop / z;
  out.passed = out.margin < 1;
  out.detail = absl::StrFormat(
      "plateau: the window mean fell %.4g, %.3g standard errors (bound %.3g)", drop, z_drop, z);
  return out;
}

TestOutcome MarginOutcome(const std::vector<double>& full, const std::vector<double>& lora,
                          double margin, double alpha) {
  TestOutcome out;
  const size_t n = std::min(full.size(), lora.size());
  if (n < 2 || !(margin > 0) || !(alpha > 0 && alpha < 1)) {
    out.margin = kInf;
    out.detail = "margin: fewer than 2 paired losses";
    return out;
  }
  double full_mean = 0, gap_mean = 0;
  for (size_t i = 0; i < n; ++i) {
    full_mean += full[i] / double(n);
    gap_mean += (lora[i] - full[i]) / double(n);
  }
  double ss = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = lora[i] - full[i] - gap_mean;
    ss += r * r;
  }
  const double se = std::sqrt(ss / double(n - 1) / double(n));
  const double upper = gap_mean + StudentQuantile(1 - alpha, double(n - 1)) * se;
  if (!(full_mean > 0)) {
    out.margin = upper <= 0 ? 0 : kInf;
    out.passed = upper <= 0;
    out.detail = "margin: the full model's mean loss is not positive";
    return out;
  }
  const double excess = upper / full_mean;  // at most this far above, at 1 - alpha
  out.margin = excess / margin;
  out.passed = out.margin < 1;
  out.detail = absl::StrFormat(
      "margin: LoRA's loss %s above the full model's, at most %s (%.3g %% bound; margin %s)",
      Percent(gap_mean / full_mean), Percent(excess), (1 - alpha) * 100, Percent(margin));
  return out;
}

double StudentQuantile(double q, double dof) {
  if (!(q > 0 && q < 1) || !(dof > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (q == 0.5) return 0;
  // P(T > t) = StudentTwoSidedP(t) / 2 for t > 0: bisect on it.
  const double tail = q > 0.5 ? 1 - q : q;
  double lo = 0, hi = 1;
  while (StudentTwoSidedP(hi, dof) / 2 > tail) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (StudentTwoSidedP(mid, dof) / 2 > tail ? lo : hi) = mid;
  }
  const double t = (lo + hi) / 2;
  return q > 0.5 ? t : -t;
}

}  // namespace hpt
