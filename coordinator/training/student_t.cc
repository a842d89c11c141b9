#include "coordinator/training/student_t.h"

#include <cmath>
#include <limits>

namespace hpt {
namespace {

// Continued fraction of I_x(a, b) (modified Lentz's method); converges
// quickly for x < (a + 1) / (a + b + 2).
double BetaContinuedFraction(double x, double a, double b) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-16;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    // Even step.
    double numerator = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + numerator * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + numerator / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    f *= d * c;
    // Odd step.
    numerator = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + numerator * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + numerator / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    f *= delta;
    if (std::fabs(delta - 1.0) < kEpsilon) break;
  }
  return f;
}

}  // namespace

double RegularizedIncompleteBeta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  // x^a (1-x)^b / (a B(a, b)), through logarithms.
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                           a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1.0) / (a + b + 2.0)) {
    return std::exp(log_front) * BetaContinuedFraction(x, a, b) / a;
  }
  // Symmetry: I_x(a, b) = 1 - I_{1-x}(b, a).
  const double log_front_swapped = std::lgamma(a + b) - std::lgamma(a) -
                                   std::lgamma(b) + b * std::log1p(-x) + a * std::log(x);
  return 1.0 - std::exp(log_front_swapped) * BetaContinuedFraction(1.0 - x, b, a) / b;
}

double StudentTwoSidedP(double t, double dof) {
  if (std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return 0.0;
  // P(|T| >= |t|) = I_{dof / (dof + t^2)}(dof / 2, 1 / 2).
  return RegularizedIncompleteBeta(dof / (dof + t * t), dof / 2.0, 0.5);
}

TTestResult StudentTTest(const std::vector<double>& a, const std::vector<double>& b) {
  TTestResult r;
  const double na = double(a.size()), nb = double(b.size());
  if (na < 1 || nb < 1 || na + nb <= 2) return r;
  for (double v : a) r.mean_a += v;
  for (double v : b) r.mean_b += v;
  r.mean_a /= na;
  r.mean_b /= nb;
  double ss = 0;
  for (double v : a) ss += (v - r.mean_a) * (v - r.mean_a);
  for (double v : b) ss += (v - r.mean_b) * (v - r.mean_b);
  r.degrees_of_freedom = na + nb - 2;
  const double pooled = ss / r.degrees_of_freedom;
  const double se = std::sqrt(pooled * (1.0 / na + 1.0 / nb));
  const double diff = r.mean_a - r.mean_b;
  if (se == 0) {
    r.t = diff == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), diff);
    r.p_value = diff == 0 ? 1.0 : 0.0;
    return r;
  }
  r.t = diff / se;
  r.p_value = StudentTwoSidedP(r.t, r.degrees_of_freedom);
  return r;
}

}  // namespace hpt
