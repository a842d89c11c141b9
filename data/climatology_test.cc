#include "data/climatology.h"

#include "data/timestamps.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

// Hourly rows from 2023-01-01 00:00, one station: `value(row)` each.
template <typename Fn>
TimeSeriesMatrix Hourly(int64_t rows, Fn value) {
  TimeSeriesMatrix m;
  m.rows = rows;
  m.columns = 1;
  int64_t start;
  ParseTimestamp("2023-01-01", &start);
  for (int64_t r = 0; r < rows; ++r) {
    m.times.push_back(start + 3600 * r);
    m.values.push_back(value(r));
  }
  return m;
}

TEST(ClimatologyTest, HourlyRowsGetAMeanPerHourOfDay) {
  // Hour h of every day reads h, plus 10 on the second day: the mean of
  // hour 5 over days 1 and 2 is 10.
  const TimeSeriesMatrix m = Hourly(72, [](int64_t r) { return float(r % 24 + (r / 24 == 1) * 10); });
  const Climatology c = Climatology::Fit(m, {{0, 48}});
  EXPECT_EQ(c.basis(), "station mean by hour of day");
  EXPECT_FLOAT_EQ(c.At(0, m.times[5]), 10.f);
  EXPECT_FLOAT_EQ(c.At(0, m.times[48 + 23]), 28.f);  // a test row takes its hour's
}

TEST(ClimatologyTest, TooShortOrTimelessRowsGetTheStationMean) {
  const TimeSeriesMatrix m = Hourly(72, [](int64_t r) { return float(r); });
  const Climatology short_span = Climatology::Fit(m, {{0, 30}});  // under 2 days
  EXPECT_EQ(short_span.basis(), "station mean");
  EXPECT_FLOAT_EQ(short_span.At(0, m.times[60]), 14.5f);
  TimeSeriesMatrix timeless = m;
  timeless.times.clear();
  const Climatology plain = Climatology::Fit(timeless, {{0, 10}, {20, 30}});
  EXPECT_EQ(plain.basis(), "station mean");
  EXPECT_FLOAT_EQ(plain.At(0, 0), 14.5f);  // the mean of 0-9 and 20-29
}

TEST(ClimatologyTest, DailyRowsOverYearsGetAMeanPerWeekOfYear) {
  TimeSeriesMatrix m;
  m.columns = 1;
  int64_t start;
  ParseTimestamp("2020-01-01", &start);
  for (int64_t d = 0; d < 3 * 365; ++d) {
    m.times.push_back(start + 86400 * d);
    m.values.push_back(float(DayOfYear(m.times.back()) / 7));  // the week's number
  }
  m.rows = int64_t(m.values.size());
  const Climatology c = Climatology::Fit(m, {{0, 2 * 365 + 1}});
  EXPECT_EQ(c.basis(), "station mean by week of year");
  EXPECT_FLOAT_EQ(c.At(0, m.times[800]), float(DayOfYear(m.times[800]) / 7));
}

}  // namespace
}  // namespace hpt
