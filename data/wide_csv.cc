#include "data/wide_csv.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "data/text_file.h"
#include "data/timestamps.h"

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

// Line `line_no`'s cells (SplitCsvLine); a quote left open is refused: a
// cell over several lines is not read.
absl::StatusOr<std::vector<absl::string_view>> SplitCells(absl::string_view line,
                                                          const std::string& source,
                                                          size_t line_no) {
  bool open_quote = false;
  std::vector<absl::string_view> cells = SplitCsvLine(line, &open_quote);
  if (open_quote) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", line_no,
        ": a double quote opens a cell that the line does not close: "
        "close it, or take the line break out of the cell (a cell over several lines is not "
        "read)"));
  }
  return cells;
}

// Cells that mark a missing value, as R, pandas and spreadsheets write
// them: read as an empty cell (data.missing says what becomes of it).
bool MarksMissing(absl::string_view cell) {
  for (absl::string_view marker : {"na", "n/a", "#n/a", "nan", "null", "none"}) {
    if (absl::EqualsIgnoreCase(cell, marker)) return true;
  }
  return false;
}

// A cell as a message quotes it: at most 40 characters, so a line that is
// one long cell (a file separated by something else) is not echoed whole.
std::string Shown(absl::string_view cell) {
  constexpr size_t kMost = 40;
  return cell.size() <= kMost ? std::string(cell) : absl::StrCat(cell.substr(0, kMost), "...");
}

// Separators other than a comma: a semicolon (how spreadsheets in locales
// with a decimal comma save CSV) and a tab.
constexpr char kOtherSeparators[] = {';', '\t'};

// `at`'s cells separated by `sep` (one of kOtherSeparators), with the fix.
absl::Status SeparatorError(const std::string& at, char sep) {
  const char* name = sep == '\t' ? "tabs" : "semicolons";
  return absl::InvalidArgumentError(absl::StrCat(
      at, ": the cells are separated by ", name,
      "; the file must be comma-separated, with '.' as the decimal mark: save it as CSV with "
      "those, or convert it (tr '",
      sep == '\t' ? "\\t" : ";", "' ',' < in > out.csv, where no cell holds a comma)"));
}

// The first line holds more semicolons (or tabs) than commas: a header
// "a;b;c", or values "1.5;2.5". A unit in a header ("rain (mm; daily)")
// beside its commas is not one.
absl::Status CheckSeparator(absl::string_view first_line, const std::string& source) {
  const auto commas = std::count(first_line.begin(), first_line.end(), ',');
  for (const char sep : kOtherSeparators) {
    if (std::count(first_line.begin(), first_line.end(), sep) > commas) {
      return SeparatorError(absl::StrCat(source, ":1"), sep);
    }
  }
  return absl::OkStatus();
}

// A header's station names, one per column that is not the time column:
// an empty cell is named by its column ("column 4", counted from 1 as a
// spreadsheet shows it); two columns of one name are refused, since the page,
// the report and an exported model name each station by it.
absl::StatusOr<std::vector<std::string>> StationNames(const std::vector<absl::string_view>& header,
                                                      int time_column, const std::string& source) {
  std::vector<std::string> names;
  std::map<std::string, int> first_column;  // each name's column, from 0
  for (int c = 0; c < int(header.size()); ++c) {
    if (c == time_column) continue;
    std::string name(absl::StripAsciiWhitespace(CsvText(header[c])));
    if (name.empty()) name = absl::StrCat("column ", c + 1);
    const auto [it, added] = first_column.emplace(name, c);
    if (!added) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":1: columns ", it->second + 1, " and ", c + 1, " are both named '", Shown(name),
          "'; each station needs a name of its own: rename one in the header"));
    }
    names.push_back(std::move(name));
  }
  return names;
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

namespace {

bool IsTime(absl::string_view cell) {
  int64_t ignored;
  return ParseTimestamp(cell, &ignored);
}

// The time column's index in `first` (the first line's cells; a header
// when `header`) and `row` (the first data row's): the named one, the
// first column where `named` is empty and that column holds a time, or -1.
absl::StatusOr<int> TimeColumn(const std::vector<absl::string_view>& first, bool header,
                               const std::vector<absl::string_view>& row,
                               const std::string& named, const std::string& source) {
  if (named == "none") return -1;
  if (named.empty()) return !row.empty() && IsTime(row[0]) ? 0 : -1;
  if (!header) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": time_column '", named, "' names a column, but the file has no header row: "
        "give the header, or leave time_column empty to read a first column of times"));
  }
  std::vector<std::string> names;
  for (size_t c = 0; c < first.size(); ++c) {
    names.emplace_back(absl::StripAsciiWhitespace(first[c]));
    if (names.back() == named) return int(c);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      source, ":1: time_column '", named, "' is not a column of the header (", 
      absl::StrJoin(names, ", "), ")"));
}

// A cell that is not a number: what it is, and the fix (for a whole
// column where it is in the first data row, else for the cell).
absl::Status BadCell(const std::string& at, absl::string_view cell, int time_column,
                     bool first_row) {
  // "5,0963;2,0564": a decimal comma split the cells where a semicolon
  // separates them.
  for (const char sep : kOtherSeparators) {
    if (absl::StrContains(cell, sep)) return SeparatorError(at.substr(0, at.rfind(':')), sep);
  }
  if (IsTime(cell)) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": '", Shown(cell), "' is a time, in a column of values",
                     time_column >= 0 ? " (the time column is another)"
                                      : ": name it as the series' time with data.csv.time_column "
                                        "(hptctl submit --time_column=NAME)"));
  }
  if (!first_row) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": '", Shown(cell),
                     "' is not a number: correct the cell, or empty it (data.missing: "
                     "interpolate or drop_rows accepts empty cells)"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      at, ": '", Shown(cell), "' is neither a number nor a time (", kTimestampForms,
      "): remove the column, or name it with data.csv.time_column if it holds the rows' times"));
}

// Reads a data row's time at `line_no` into `times`, after the row before.
absl::Status ReadTime(const std::string& source, size_t line_no, int column,
                      absl::string_view cell, std::vector<int64_t>* times) {
  const std::string at = absl::StrCat(source, ":", line_no, ":", column + 1);
  int64_t t;
  if (!ParseTimestamp(cell, &t)) {
    return absl::InvalidArgumentError(absl::StrCat(
        at, ": '", Shown(cell), "' in the time column is not a time (", kTimestampForms, ")"));
  }
  if (!times->empty() && t <= times->back()) {
    return absl::InvalidArgumentError(absl::StrCat(
        at, ": time '", Shown(cell), "' is not after the row before's (",
        FormatTimestamp(times->back()), "): sort the file by time and remove repeated rows"));
  }
  times->push_back(t);
  return absl::OkStatus();
}

// One data row's values (`row`, a NaN for an empty cell that the options
// accept); sets `*drop` where the row leaves the series.
absl::Status ReadValues(const std::vector<absl::string_view>& cells, int time_column,
                        const std::string& where, bool first_row, const WideCsvOptions& options,
                        std::vector<float>* row, bool* drop) {
  row->clear();
  *drop = false;
  for (size_t c = 0; c < cells.size(); ++c) {
    if (int(c) == time_column) continue;
    float v;
    if (ParseFloat(cells[c], &v)) {
      row->push_back(v);
      continue;
    }
    const std::string at = absl::StrCat(where, ":", c + 1);
    const absl::string_view cell = absl::StripAsciiWhitespace(cells[c]);
    const bool marked = MarksMissing(cell);
    if (!cell.empty() && !marked) return BadCell(at, cell, time_column, first_row);
    if (options.missing == MissingCells::kRefuse) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ": missing value", marked ? absl::StrCat(" ('", cell, "')") : "",
          " (data.missing: interpolate or drop_rows accepts gaps; hptctl submit --missing=...)"));
    }
    *drop |= options.missing == MissingCells::kDropRows;
    row->push_back(std::numeric_limits<float>::quiet_NaN());
  }
  return absl::OkStatus();
}

// A row of another number of cells than the first line: the counts, and
// where a header closed by a comma (or a row by one) explains it, that.
absl::Status CellCountError(const std::string& source, size_t line_no,
                            const std::vector<absl::string_view>& first, bool header,
                            const std::vector<absl::string_view>& cells) {
  std::string why;
  if (cells.size() + 1 == first.size() && first.back().empty()) {
    why = absl::StrCat(": the ", header ? "header" : "first line", " ends with a comma; remove it");
  } else if (cells.size() == first.size() + 1 && cells.back().empty()) {
    why = ": the line ends with a comma; remove it";
  } else if (cells.size() > first.size()) {
    why = ": a cell holding a comma needs double quotes around it";
  }
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line_no, ": expected ", first.size(),
                                                 " columns, got ", cells.size(), why));
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
  // A comma closing every line, as some spreadsheets export, adds no column.
  if (absl::c_all_of(lines, [](absl::string_view l) {
        return absl::EndsWith(absl::StripTrailingAsciiWhitespace(l), ",");
      })) {
    for (absl::string_view& l : lines) {
      l = absl::StripTrailingAsciiWhitespace(l);
      l.remove_suffix(1);
    }
  }
  if (absl::Status s = CheckSeparator(lines[0], source); !s.ok()) return s;
  absl::StatusOr<std::vector<absl::string_view>> first_cells = SplitCells(lines[0], source, 1);
  if (!first_cells.ok()) return first_cells.status();
  const std::vector<absl::string_view>& first = *first_cells;
  bool values_only = true;  // every cell a number or a time
  for (absl::string_view c : first) {
    float ignored;
    values_only &= ParseFloat(c, &ignored) || IsTime(c);
  }
  const bool header = options.header == CsvHeader::kPresent ||
                      (options.header == CsvHeader::kAuto && !values_only);
  const size_t first_data = header ? 1 : 0;
  if (first_data >= lines.size()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no data rows after the header"));
  }
  absl::StatusOr<std::vector<absl::string_view>> first_row =
      SplitCells(lines[first_data], source, first_data + 1);
  if (!first_row.ok()) return first_row.status();
  absl::StatusOr<int> time_column =
      TimeColumn(first, header, *first_row, options.time_column, source);
  if (!time_column.ok()) return time_column.status();
  if (*time_column >= 0) {
    m.time_name = header ? CsvText(first[*time_column]) : "time";
  }
  if (header) {
    absl::StatusOr<std::vector<std::string>> names = StationNames(first, *time_column, source);
    if (!names.ok()) return names.status();
    m.column_names = std::move(*names);
  }
  m.columns = int64_t(first.size()) - (*time_column >= 0 ? 1 : 0);
  if (m.columns < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": the only column is the time column; a station's values need one more"));
  }
  m.values.reserve((lines.size() - first_data) * m.columns);
  WideCsvGaps gaps;
  std::vector<float> row;
  for (size_t i = first_data; i < lines.size(); ++i) {
    if (absl::Status s = CheckLoadingEvery(i, source, options.limits); !s.ok()) return s;
    const size_t line_no = i + 1;
    absl::StatusOr<std::vector<absl::string_view>> split = SplitCells(lines[i], source, line_no);
    if (!split.ok()) return split.status();
    const std::vector<absl::string_view>& cells = *split;
    if (cells.size() != first.size()) return CellCountError(source, line_no, first, header, cells);
    bool drop = false;
    const std::string where = absl::StrCat(source, ":", line_no);
    if (absl::Status s =
            ReadValues(cells, *time_column, where, i == first_data, options, &row, &drop);
        !s.ok()) {
      return s;
    }
    if (drop) {
      ++gaps.dropped;
      continue;
    }
    if (*time_column >= 0) {
      absl::Status s = ReadTime(source, line_no, *time_column, cells[*time_column], &m.times);
      if (!s.ok()) return s;
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
