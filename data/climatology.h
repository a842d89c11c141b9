// The climatology forecast of a series, the reference a forecast's skill
// is judged against beside persistence: each station's mean over the
// training rows, taken apart by time of day or by week of year where the
// rows' times show that cycle and the training rows cover it twice:
//   - a step under a day that divides it, over at least 2 days of
//     training rows: one mean per time of day (per hour, for hourly data);
//   - a step of a day or more, over at least 2 years: one per week of year;
//   - otherwise (no times, or too short a span): one mean a station.
// A time-of-day or week bin that the training rows never reach takes the
// station's whole mean.
#ifndef HPT_DATA_CLIMATOLOGY_H_
#define HPT_DATA_CLIMATOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "data/series.h"

namespace hpt {

class Climatology {
 public:
  // Fitted on `series`' `train` rows (values as they are: z-scored ones
  // give z-scored means).
  static Climatology Fit(const TimeSeriesMatrix& series, const std::vector<RowRange>& train);

  // The mean of `column` for the row at time `time` (its bin's).
  float At(int64_t column, int64_t time) const;
  // In words: "station mean by hour of day", "station mean by week of
  // year", "station mean".
  const std::string& basis() const { return basis_; }

 private:
  int64_t Bin(int64_t time) const;
  enum class Cycle { kNone, kDay, kYear };
  Cycle cycle_ = Cycle::kNone;
  int64_t step_s_ = 0, bins_ = 1, columns_ = 0;
  std::vector<float> means_;  // [bins][columns]
  std::string basis_ = "station mean";
};

}  // namespace hpt

#endif  // HPT_DATA_CLIMATOLOGY_H_
