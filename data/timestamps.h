// Timestamps of a series' rows: what a CSV's time column holds, read as
// UTC seconds since 1970-01-01, and written back for pages and summaries.
// Accepted forms (an optional trailing "Z"; a "T" or a space between date
// and time; "/" or "-" between the date's parts):
//
//   2023-01-01                2023-01-01 06:00          2023-01-01T06:00:30
//   2023/01/01 06:00
//
//   int64_t s;
//   if (ParseTimestamp("2023-01-01 06:00", &s)) ...   // s == 1672552800
#ifndef HPT_DATA_TIMESTAMPS_H_
#define HPT_DATA_TIMESTAMPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace hpt {

// Days since 1970-01-01 of a civil date (proleptic Gregorian).
int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day);

// `text` (whitespace around it ignored) as UTC seconds; false where it is
// none of the accepted forms or names an impossible date or time.
bool ParseTimestamp(absl::string_view text, int64_t* seconds);

// The forms ParseTimestamp takes, for error messages.
inline constexpr char kTimestampForms[] = "YYYY-MM-DD[ HH:MM[:SS]]";

// "2023-01-01 06:00", or "2023-01-01" where `date_only`.
std::string FormatTimestamp(int64_t seconds, bool date_only = false);

// Day of the year of `seconds` (0 for 1 January).
int64_t DayOfYear(int64_t seconds);

// The most common gap between consecutive times (0 for fewer than two).
int64_t TypicalStep(const std::vector<int64_t>& times);

}  // namespace hpt

#endif  // HPT_DATA_TIMESTAMPS_H_
