// When the phase controller's first check comes: it compares the mean
// losses (and weight distances) of the last three check windows, so the
// first check closes the third window; under hpt.switch_rule trend, the
// last hpt.trend_windows (at least three). The controller, the note a
// too-short submission gets and a job's diagnosis all count it here.
//
//   const int64_t first = FirstCheckWindows(h.switch_rule(), h.trend_windows());
//   absl::StrCat("the first check closes the ", Ordinal(first), " window");
#ifndef HPT_COMMON_CHECK_WINDOWS_H_
#define HPT_COMMON_CHECK_WINDOWS_H_

#include <cstdint>
#include <string>

#include "proto/job_service.pb.h"

namespace hpt {

// The windows the first check closes: 3, or max(3, trend_windows) under
// the trend rule.
int64_t FirstCheckWindows(SwitchRule::Name rule, int64_t trend_windows);

// "third", "fifth", ..., "tenth", then "11th", "22nd", "103rd".
std::string Ordinal(int64_t n);

}  // namespace hpt

#endif  // HPT_COMMON_CHECK_WINDOWS_H_
