#include "data/text_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hpt {

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> SplitTrimmedCells(absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string> cells;
  for (absl::string_view c : absl::StrSplit(line, ',')) {
    cells.emplace_back(absl::StripAsciiWhitespace(c));
  }
  return cells;
}

}  // namespace hpt
