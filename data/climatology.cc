#include "data/climatology.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "data/timestamps.h"

namespace hpt {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kWeeksInYear = 53;  // day 364 and 365 make a 53rd week

}  // namespace

int64_t Climatology::Bin(int64_t time) const {
  switch (cycle_) {
    case Cycle::kDay:
      return ((time % kDay) + kDay) % kDay / step_s_;
    case Cycle::kYear:
      return DayOfYear(time) / 7;
    case Cycle::kNone:
      break;
  }
  return 0;
}

float Climatology::At(int64_t column, int64_t time) const {
  return means_[Bin(time) * columns_ + column];
}

Climatology Climatology::Fit(const TimeSeriesMatrix& series, const std::vector<RowRange>& train) {
  Climatology c;
  c.columns_ = series.columns;
  int64_t first = INT64_MAX, last = INT64_MIN;
  if (!series.times.empty()) {
    for (const RowRange& r : train) {
      if (r.end <= r.begin) continue;
      first = std::min(first, series.times[r.begin]);
      last = std::max(last, series.times[r.end - 1]);
    }
    c.step_s_ = TypicalStep(series.times);
  }
  // The time the training rows cover, each row counted for its step.
  const int64_t span = last >= first ? last - first + c.step_s_ : 0;
  if (c.step_s_ > 0 && c.step_s_ < kDay && kDay % c.step_s_ == 0 && span >= 2 * kDay) {
    c.cycle_ = Cycle::kDay;
    c.bins_ = kDay / c.step_s_;
    c.basis_ = c.step_s_ == 3600 ? "station mean by hour of day"
                                 : absl::StrCat("station mean by time of day (every ",
                                                c.step_s_ / 60, " min)");
  } else if (c.step_s_ >= kDay && span >= 2 * 365 * kDay) {
    c.cycle_ = Cycle::kYear;
    c.bins_ = kWeeksInYear;
    c.basis_ = "station mean by week of year";
  }
  std::vector<double> sums(c.bins_ * c.columns_, 0.0), whole(c.columns_, 0.0);
  std::vector<int64_t> counts(c.bins_ * c.columns_, 0);
  int64_t rows = 0;
  for (const RowRange& r : train) {
    for (int64_t row = r.begin; row < r.end; ++row, ++rows) {
      const int64_t bin = series.times.empty() ? 0 : c.Bin(series.times[row]);
      for (int64_t col = 0; col < c.columns_; ++col) {
        sums[bin * c.columns_ + col] += series.at(row, col);
        ++counts[bin * c.columns_ + col];
        whole[col] += series.at(row, col);
      }
    }
  }
  c.means_.assign(c.bins_ * c.columns_, 0.f);
  for (int64_t i = 0; i < c.bins_ * c.columns_; ++i) {
    const int64_t col = i % c.columns_;
    c.means_[i] = counts[i] > 0 ? float(sums[i] / double(counts[i]))
                  : rows > 0    ? float(whole[col] / double(rows))
                                : 0.f;
  }
  return c;
}

}  // namespace hpt
