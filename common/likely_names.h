// What a mistyped name most likely meant, for an error's "did you mean":
// the known names within a small edit distance, or else those that hold
// it as one or more whole words ("gpu" in "reference_gpu").
//
//   absl::StrCat("unknown setting '", key, "'", DidYouMean(key, names), "; known: ...")
#ifndef HPT_COMMON_LIKELY_NAMES_H_
#define HPT_COMMON_LIKELY_NAMES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace hpt {

// The names `typed` most likely meant, in the order given. Case is
// ignored and '.', '-' and '_' read alike. First those at the least edit
// distance, where it is at most a third of the typed length (and at least
// 1); else every name holding `typed` as a run of whole '_'-separated
// words. Empty when none is close, or when `typed` is itself one of them.
std::vector<std::string> LikelyNames(absl::string_view typed,
                                     const std::vector<std::string>& names);

// " (did you mean 'x'?)", " (did you mean one of x, y?)" for at most five,
// or "" when no name is likely.
std::string DidYouMean(absl::string_view typed, const std::vector<std::string>& names);

}  // namespace hpt

#endif  // HPT_COMMON_LIKELY_NAMES_H_
