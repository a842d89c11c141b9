#include "data/wide_csv.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <algorithm>
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

// Each station's empty cells (NaN) interpolated linearly between its
// neighbouring values, held at the nearest one at either end.
absl::Status FillGaps(const std::string& source, TimeSeriesMatrix* m, int64_t* filled) {
  for (int64_t c = 0; c < m->columns; ++c) {
    auto at = [&](int64_t r) -> float& { return m->values[r * m->columns + c]; };
    int64_t last = -1;  // the last row with a value
    for (int64_t r = 0; r <= m->rows; ++r) {
      if (r < m->rows && std::isnan(at(r))) continue;
      if (r - last > 1) {  // rows last+1 .. r-1 are a gap
        if (last < 0 && r == m->rows) {
          return absl::InvalidArgumentError(absl::StrCat(
              source, ": column ", c + 1, " has no value at all"));
        }
        for (int64_t g = last + 1; g < r; ++g) {
          const float v = last < 0       ? at(r)
                          : r == m->rows ? at(last)
                                         : at(last) + (at(r) - at(last)) * float(g - last) /
                                                          float(r - last);
          at(g) = v;
          ++*filled;
        }
      }
      last = r;
    }
  }
  return absl::OkStatus();
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
  WideCsvGaps gaps;
  for (size_t i = first_data; i < lines.size(); ++i) {
    if (absl::Status s = CheckLoadingEvery(i, source, options.limits); !s.ok()) return s;
    const size_t line_no = i + 1;
    std::vector<absl::string_view> cells = SplitCells(lines[i]);
    if (static_cast<int64_t>(cells.size()) != m.columns) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":", line_no, ": expected ", m.columns, " columns, got ",
          cells.size()));
    }
    std::vector<float> row(cells.size());
    bool drop = false;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (ParseFloat(cells[c], &row[c])) continue;
      const absl::string_view cell = absl::StripAsciiWhitespace(cells[c]);
      if (!cell.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ":", line_no, ":", c + 1, ": '", cell, "' is not a finite number"));
      }
      if (options.missing == MissingCells::kRefuse) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ":", line_no, ":", c + 1,
            ": missing value (data.missing: interpolate or drop_rows accepts gaps; "
            "hptctl submit --missing=...)"));
      }
      drop = options.missing == MissingCells::kDropRows;
      row[c] = std::numeric_limits<float>::quiet_NaN();
    }
    if (drop) {
      ++gaps.dropped;
      continue;
    }
    m.values.insert(m.values.end(), row.begin(), row.end());
  }
  m.rows = static_cast<int64_t>(m.values.size()) / std::max<int64_t>(m.columns, 1);
  if (m.rows == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": every data row has a missing value (data.missing: drop_rows left none)"));
  }
  if (absl::Status s = FillGaps(source, &m, &gaps.filled); !s.ok()) return s;
  if (options.gaps != nullptr) *options.gaps = gaps;
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
