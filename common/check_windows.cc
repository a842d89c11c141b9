#include "common/check_windows.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace hpt {

int64_t FirstCheckWindows(SwitchRule::Name rule, int64_t trend_windows) {
  return rule == SwitchRule::trend ? std::max<int64_t>(3, trend_windows) : 3;
}

std::string Ordinal(int64_t n) {
  static const char* const kWords[] = {"first", "second",  "third",  "fourth", "fifth",
                                       "sixth", "seventh", "eighth", "ninth",  "tenth"};
  if (n >= 1 && n <= 10) return kWords[n - 1];
  const int64_t tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return absl::StrCat(n, suffix);
}

}  // namespace hpt
