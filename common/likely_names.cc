#include "common/likely_names.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hpt {
namespace {

// Lower case, with '.' and '-' as '_'.
std::string Folded(absl::string_view name) {
  std::string out = absl::AsciiStrToLower(name);
  std::replace(out.begin(), out.end(), '.', '_');
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

// Levenshtein distance: insertions, deletions and substitutions.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Whether `words` ("a_b") stands in `name` as whole '_'-separated words.
bool HoldsWords(const std::string& name, const std::string& words) {
  const std::string padded = absl::StrCat("_", name, "_");
  return !words.empty() && absl::StrContains(padded, absl::StrCat("_", words, "_"));
}

}  // namespace

std::vector<std::string> LikelyNames(absl::string_view typed,
                                     const std::vector<std::string>& names) {
  const std::string want = Folded(typed);
  if (want.empty()) return {};
  const size_t most = std::max<size_t>(1, want.size() / 3);
  size_t best = most + 1;
  std::vector<std::string> near;
  for (const std::string& name : names) {
    const size_t d = EditDistance(want, Folded(name));
    if (d == 0 && name == typed) return {};
    if (d < best) {
      best = d;
      near.clear();
    }
    if (d == best) near.push_back(name);
  }
  if (!near.empty()) return near;
  std::vector<std::string> holding;
  for (const std::string& name : names) {
    if (HoldsWords(Folded(name), want)) holding.push_back(name);
  }
  return holding;
}

std::string DidYouMean(absl::string_view typed, const std::vector<std::string>& names) {
  std::vector<std::string> likely = LikelyNames(typed, names);
  if (likely.empty() || likely.size() > 5) return "";
  if (likely.size() == 1) return absl::StrCat(" (did you mean '", likely[0], "'?)");
  return absl::StrCat(" (did you mean one of ", absl::StrJoin(likely, ", "), "?)");
}

}  // namespace hpt
