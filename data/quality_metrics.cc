#include "data/quality_metrics.h"

#include <cmath>

namespace hpt {

void QualityAccumulator::Add(double p, double y, int64_t station) {
  ++n_;
  const double e = p - y;
  sum_sq_err_ += e * e;
  sum_abs_err_ += std::fabs(e);
  if (station >= int64_t(stations_.size())) stations_.resize(station + 1);
  Sums& s = stations_[station];
  if (s.n++ == 0) s.shift_y = y, s.shift_p = p;
  const double dy = y - s.shift_y, dp = p - s.shift_p;
  s.y += dy;
  s.y2 += dy * dy;
  s.p += dp;
  s.p2 += dp * dp;
  s.py += dp * dy;
}

void QualityAccumulator::Add(const std::vector<float>& prediction, const std::vector<float>& truth,
                             int64_t station) {
  for (size_t i = 0; i < prediction.size() && i < truth.size(); ++i) {
    Add(prediction[i], truth[i], station);
  }
}

QualityMetrics QualityAccumulator::Finish() const {
  QualityMetrics m;
  m.set_values(n_);
  if (n_ == 0) return m;
  m.set_rmse(std::sqrt(sum_sq_err_ / double(n_)));
  m.set_mae(sum_abs_err_ / double(n_));
  // Sums of squares about each station's own means.
  double ss_y = 0, ss_p = 0, s_py = 0;
  for (const Sums& s : stations_) {
    if (s.n == 0) continue;
    const double n = double(s.n);
    ss_y += s.y2 - s.y * s.y / n;
    ss_p += s.p2 - s.p * s.p / n;
    s_py += s.py - s.p * s.y / n;
  }
  if (ss_y > 0) m.set_nse(1.0 - sum_sq_err_ / ss_y);
  if (ss_y > 0 && ss_p > 0) m.set_r2(s_py * s_py / (ss_y * ss_p));
  return m;
}

double ForecastSkill(double rmse, double reference_rmse) {
  return reference_rmse > 0 ? 1 - rmse / reference_rmse : 0;
}

}  // namespace hpt
