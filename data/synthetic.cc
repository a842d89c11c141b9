#include "data/synthetic.h"

#include <cmath>
#include <random>
#include <string>

namespace hpt {

TimeSeriesMatrix MakeSyntheticSeries(const SyntheticOptions& options) {
  constexpr double kPi = 3.14159265358979323846;
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);

  const int64_t s_count = options.stations;
  std::vector<double> x(s_count), y(s_count), amplitude(s_count);
  for (int64_t s = 0; s < s_count; ++s) {
    x[s] = unit(rng);
    y[s] = unit(rng);
    amplitude[s] = 0.5 + unit(rng);
  }
  // The advected pulse travels along this direction at `speed` units/step.
  const double angle = 2.0 * kPi * unit(rng);
  const double dir_x = std::cos(angle), dir_y = std::sin(angle);
  const double speed = 0.02;
  const double pulse_period = 64.0;

  TimeSeriesMatrix m;
  m.rows = options.time_steps;
  m.columns = s_count;
  m.values.resize(m.rows * m.columns);
  for (int64_t s = 0; s < s_count; ++s) {
    m.column_names.push_back("station_" + std::to_string(s));
  }
  for (int64_t t = 0; t < m.rows; ++t) {
    for (int64_t s = 0; s < s_count; ++s) {
      const double seasonal =
          amplitude[s] *
          std::sin(2.0 * kPi * t / options.period + 2.0 * kPi * x[s]);
      // Distance along the wind: stations downwind see the pulse later.
      const double along = x[s] * dir_x + y[s] * dir_y;
      const double phase =
          std::fmod(t - along / speed + 1000.0 * pulse_period, pulse_period);
      const double pulse = std::exp(-0.5 * std::pow((phase - 16.0) / 4.0, 2));
      m.values[t * s_count + s] = static_cast<float>(
          seasonal + 1.5 * pulse + options.noise * normal(rng));
    }
  }
  return m;
}

}  // namespace hpt
