#include "data/quality_metrics.h"

#include <cmath>

namespace hpt {

void QualityAccumulator::Add(double p, double y) {
  ++n_;
  const double e = p - y;
  sum_sq_err_ += e * e;
  sum_abs_err_ += std::fabs(e);
  sum_y_ += y;
  sum_y2_ += y * y;
  sum_p_ += p;
  sum_p2_ += p * p;
  sum_py_ += p * y;
}

void QualityAccumulator::Add(const std::vector<float>& prediction,
                             const std::vector<float>& truth) {
  for (size_t i = 0; i < prediction.size() && i < truth.size(); ++i) {
    Add(prediction[i], truth[i]);
  }
}

QualityMetrics QualityAccumulator::Finish() const {
  QualityMetrics m;
  m.set_values(n_);
  if (n_ == 0) return m;
  const double n = double(n_);
  m.set_rmse(std::sqrt(sum_sq_err_ / n));
  m.set_mae(sum_abs_err_ / n);
  const double ss_y = sum_y2_ - sum_y_ * sum_y_ / n;
  const double ss_p = sum_p2_ - sum_p_ * sum_p_ / n;
  const double s_py = sum_py_ - sum_p_ * sum_y_ / n;
  if (ss_y > 0) m.set_nse(1.0 - sum_sq_err_ / ss_y);
  if (ss_y > 0 && ss_p > 0) m.set_r2(s_py * s_py / (ss_y * ss_p));
  return m;
}

double ForecastSkill(double rmse, double reference_rmse) {
  return reference_rmse > 0 ? 1 - rmse / reference_rmse : 0;
}

}  // namespace hpt
