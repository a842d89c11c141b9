// A synthetic spatio-temporal data set: stations scattered on a unit square,
// each observing a seasonal cycle whose phase depends on its position, plus
// a pulse advected across the plane by a constant wind, plus Gaussian noise.
// Deterministic for a given seed, so tests and the demo see the same data.
#ifndef HPT_DATA_SYNTHETIC_H_
#define HPT_DATA_SYNTHETIC_H_

#include <cstdint>

#include "data/series.h"

namespace hpt {

struct SyntheticOptions {
  int64_t stations = 16;
  int64_t time_steps = 512;
  uint64_t seed = 7;
  double noise = 0.05;       // standard deviation of the additive noise
  double period = 48.0;      // steps per seasonal cycle
};

TimeSeriesMatrix MakeSyntheticSeries(const SyntheticOptions& options);

}  // namespace hpt

#endif  // HPT_DATA_SYNTHETIC_H_
