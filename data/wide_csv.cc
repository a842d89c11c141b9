#include "data/wide_csv.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace hpt {
namespace {

bool ParseFloat(absl::string_view cell, float* out) {
  std::string s(absl::StripAsciiWhitespace(cell));
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) {
    return false;
  }
  *out = static_cast<float>(v);
  return true;
}

std::vector<absl::string_view> SplitCells(absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return absl::StrSplit(line, ',');
}

}  // namespace

absl::StatusOr<TimeSeriesMatrix> ParseWideCsv(const std::string& text,
                                              const std::string& source,
                                              const WideCsvOptions& options) {
  TimeSeriesMatrix m;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  // A final newline leaves one empty piece; blank lines elsewhere are errors.
  while (!lines.empty() && absl::StripAsciiWhitespace(lines.back()).empty()) {
    lines.pop_back();
  }
  if (lines.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": file is empty"));
  }
  size_t first_data = 0;
  {
    std::vector<absl::string_view> cells = SplitCells(lines[0]);
    bool all_numbers = true;
    float ignored;
    for (absl::string_view c : cells) all_numbers &= ParseFloat(c, &ignored);
    const bool header = options.header == CsvHeader::kPresent ||
                        (options.header == CsvHeader::kAuto && !all_numbers);
    if (header) {
      for (absl::string_view c : cells) {
        m.column_names.emplace_back(absl::StripAsciiWhitespace(c));
      }
      first_data = 1;
    }
    m.columns = static_cast<int64_t>(cells.size());
  }
  if (first_data >= lines.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no data rows after the header"));
  }
  m.values.reserve((lines.size() - first_data) * m.columns);
  for (size_t i = first_data; i < lines.size(); ++i) {
    if (absl::Status s = CheckLoadingEvery(i, source, options.limits); !s.ok()) return s;
    const size_t line_no = i + 1;
    std::vector<absl::string_view> cells = SplitCells(lines[i]);
    if (static_cast<int64_t>(cells.size()) != m.columns) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":", line_no, ": expected ", m.columns, " columns, got ",
          cells.size()));
    }
    for (size_t c = 0; c < cells.size(); ++c) {
      float v;
      if (!ParseFloat(cells[c], &v)) {
        const absl::string_view cell = absl::StripAsciiWhitespace(cells[c]);
        return absl::InvalidArgumentError(absl::StrCat(
            source, ":", line_no, ":", c + 1, ": ",
            cell.empty() ? std::string("missing value")
                         : absl::StrCat("'", cell, "' is not a finite number")));
      }
      m.values.push_back(v);
    }
  }
  m.rows = static_cast<int64_t>(lines.size() - first_data);
  return m;
}

absl::StatusOr<TimeSeriesMatrix> LoadWideCsv(const std::string& path,
                                             const WideCsvOptions& options) {
  absl::StatusOr<std::string> text = ReadTextFile(path, options.limits);
  if (!text.ok()) return text.status();
  absl::StatusOr<TimeSeriesMatrix> m = ParseWideCsv(*text, path, options);
  if (m.ok()) {
    if (absl::Status s = CheckCells(path, m->rows, m->columns, options.limits); !s.ok()) return s;
  }
  return m;
}

}  // namespace hpt
