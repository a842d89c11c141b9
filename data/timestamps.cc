#include "data/timestamps.h"

#include <cstdio>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace hpt {

int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

namespace {

bool LeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && LeapYear(y) ? 29 : kDays[m - 1];
}

// Reads exactly `digits` decimal digits at `*at`.
bool Digits(absl::string_view s, size_t* at, int digits, int64_t* out) {
  if (*at + digits > s.size()) return false;
  int64_t v = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = s[*at + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *at += digits;
  *out = v;
  return true;
}

bool Char(absl::string_view s, size_t* at, const char* any) {
  if (*at >= s.size()) return false;
  for (const char* c = any; *c != '\0'; ++c) {
    if (s[*at] == *c) {
      ++*at;
      return true;
    }
  }
  return false;
}

}  // namespace

bool ParseTimestamp(absl::string_view text, int64_t* seconds) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  if (!s.empty() && (s.back() == 'Z' || s.back() == 'z')) s.remove_suffix(1);
  size_t at = 0;
  int64_t y, mo, d, h = 0, mi = 0, sec = 0;
  if (!Digits(s, &at, 4, &y) || !Char(s, &at, "-/") || !Digits(s, &at, 2, &mo)) return false;
  const char separator = s[at - 3];
  if (at >= s.size() || s[at] != separator) return false;
  ++at;
  if (!Digits(s, &at, 2, &d)) return false;
  if (at < s.size()) {
    if (!Char(s, &at, "T ") || !Digits(s, &at, 2, &h) || !Char(s, &at, ":") ||
        !Digits(s, &at, 2, &mi)) {
      return false;
    }
    if (at < s.size() && (!Char(s, &at, ":") || !Digits(s, &at, 2, &sec))) return false;
    if (at != s.size()) return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || sec > 59) {
    return false;
  }
  *seconds = ((DaysFromCivil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
  return true;
}

std::string FormatTimestamp(int64_t seconds, bool date_only) {
  int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
  const int64_t in_day = seconds - days * 86400;
  // The civil date of `days` (the inverse of DaysFromCivil).
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2);
  if (date_only) return absl::StrFormat("%04d-%02d-%02d", y, m, d);
  return absl::StrFormat("%04d-%02d-%02d %02d:%02d", y, m, d, in_day / 3600, in_day / 60 % 60);
}

int64_t DayOfYear(int64_t seconds) {
  const std::string date = FormatTimestamp(seconds, /*date_only=*/true);
  const int64_t year = std::stoll(date.substr(0, 4));
  const int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
  return days - DaysFromCivil(year, 1, 1);
}

int64_t TypicalStep(const std::vector<int64_t>& times) {
  std::map<int64_t, int64_t> gaps;
  for (size_t i = 1; i < times.size(); ++i) ++gaps[times[i] - times[i - 1]];
  int64_t best = 0, count = 0;
  for (const auto& [gap, n] : gaps) {
    if (n > count) best = gap, count = n;
  }
  return best;
}

}  // namespace hpt
