// Two-sample Student t-test with equal variances (pooled), two-sided, and
// the Student t distribution's CDF computed from the regularized
// incomplete beta function (continued fraction), accurate for any degrees
// of freedom. Used by the phase controller to decide whether LoRA training
// tracks full training.
//
//   TTestResult r = StudentTTest(full_losses, lora_losses);
//   bool same = r.p_value >= 0.01;
#ifndef HPT_COORDINATOR_TRAINING_T_TEST_H_
#define HPT_COORDINATOR_TRAINING_T_TEST_H_

#include <vector>

namespace hpt {

struct TTestResult {
  double t = 0;
  double degrees_of_freedom = 0;
  double p_value = 1;  // two-sided
  double mean_a = 0, mean_b = 0;
};

// Requires at least two samples in total beyond two (n_a + n_b > 2). When
// both samples have zero variance, p is 1 if the means are equal, else 0.
TTestResult StudentTTest(const std::vector<double>& a, const std::vector<double>& b);

// P(|T| >= |t|) for Student's t with `dof` degrees of freedom.
double StudentTwoSidedP(double t, double dof);

// Regularized incomplete beta I_x(a, b), 0 <= x <= 1, a, b > 0.
double RegularizedIncompleteBeta(double x, double a, double b);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_T_TEST_H_
