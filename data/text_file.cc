#include "data/text_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/user_file.h"

namespace hpt {
namespace {

bool Under(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (absl::StartsWith(path, root) && path.size() > root.size() &&
                          path[root.size()] == '/');
}

absl::Status CheckNode(const std::string& path, const struct stat& st, const DataLimits& limits,
                       bool directory) {
  if (directory) {
    if (!S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a directory"));
    }
    return absl::OkStatus();
  }
  return CheckRegularFile(path, st, limits.max_file_bytes);
}

}  // namespace

absl::Status MissingDataFile(const std::string& path, const DataLimits& limits) {
  // A missing file is the request's fault, not a missing job (NOT_FOUND
  // is hptctl's "no such job").
  return absl::FailedPreconditionError(absl::StrCat(
      path, ": no such file or directory on the coordinator's machine (data roots: ",
      DescribeRoots(limits), ")",
      path.empty() || path[0] == '/' ? "" : "; a relative path is read from the coordinator's "
                                            "working directory: give it absolute"));
}

std::string DescribeRoots(const DataLimits& limits) {
  return limits.roots.empty() ? "(any)" : absl::StrJoin(limits.roots, ", ");
}

absl::StatusOr<std::string> ResolveDataPath(const std::string& path, const DataLimits& limits,
                                            bool directory) {
  if (path.empty()) return absl::InvalidArgumentError("empty data path");
  char buffer[PATH_MAX];
  if (realpath(path.c_str(), buffer) == nullptr) {
    if (errno == EACCES) {
      return absl::PermissionDeniedError(absl::StrCat(path, ": not readable"));
    }
    return MissingDataFile(path, limits);
  }
  const std::string resolved = buffer;
  if (!limits.roots.empty()) {
    bool inside = false;
    for (const std::string& root : limits.roots) inside = inside || Under(resolved, root);
    if (!inside) {
      return absl::PermissionDeniedError(absl::StrCat(
          path, ": outside the data roots (", DescribeRoots(limits), "); ",
          limits.widen_hint.empty()
              ? "to read it, start the coordinator with --data_root=DIR[,DIR...]"
              : limits.widen_hint));
    }
  }
  struct stat st;
  if (stat(resolved.c_str(), &st) != 0) return MissingDataFile(path, limits);
  if (absl::Status s = CheckNode(path, st, limits, directory); !s.ok()) return s;
  return resolved;
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path, const DataLimits& limits) {
  absl::StatusOr<std::string> resolved = ResolveDataPath(path, limits);
  if (!resolved.ok()) return resolved.status();
  // The resolved path, not followed again: should a symlink or a FIFO have
  // been swapped in since the check, the read refuses it.
  ReadFileOptions options;
  options.no_follow = true;
  options.shown_as = path;
  options.before_read = [&] { return CheckLoading(path, limits); };
  absl::StatusOr<std::string> text = ReadUserFile(*resolved, limits.max_file_bytes, options);
  if (!text.ok()) return text;
  // Spreadsheets save "CSV UTF-8" with a byte-order mark, which would
  // otherwise glue itself to the first cell (and turn a first row of values
  // into a header). UTF-16, their "Unicode text", is not read.
  constexpr absl::string_view kUtf8Mark = "\xEF\xBB\xBF";
  if (absl::StartsWith(*text, kUtf8Mark)) text->erase(0, kUtf8Mark.size());
  if (absl::StartsWith(*text, "\xFF\xFE") || absl::StartsWith(*text, "\xFE\xFF")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": the file is UTF-16 text: save it as UTF-8 (a spreadsheet's \"CSV UTF-8\"), "
                     "or convert it with iconv -f UTF-16 -t UTF-8"));
  }
  return text;
}

absl::Status CheckLoading(absl::string_view what, const DataLimits& limits) {
  if (limits.cancelled && limits.cancelled()) {
    return absl::CancelledError(absl::StrCat(what, ": loading stopped: the job was cancelled"));
  }
  if (absl::Now() > limits.deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": loading took longer than its time limit (--max_load_s)"));
  }
  return absl::OkStatus();
}

absl::Status CheckCells(const std::string& what, int64_t rows, int64_t columns,
                        const DataLimits& limits) {
  if (rows < 0 || columns < 0 ||
      (columns > 0 && rows > limits.max_cells / columns)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", rows, " rows x ", columns, " columns is over the limit of ",
                     limits.max_cells, " cells (--max_data_cells)"));
  }
  return absl::OkStatus();
}

absl::string_view UnquotedCell(absl::string_view cell) {
  cell = absl::StripAsciiWhitespace(cell);  // a trailing '\r' too
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
    cell = absl::StripAsciiWhitespace(cell.substr(1, cell.size() - 2));
  }
  return cell;
}

std::vector<absl::string_view> SplitCsvLine(absl::string_view line, bool* open_quote) {
  std::vector<absl::string_view> cells;
  if (open_quote != nullptr) *open_quote = false;
  if (!absl::StrContains(line, '"')) {  // most lines: no quotes to respect
    for (absl::string_view c : absl::StrSplit(line, ',')) cells.push_back(UnquotedCell(c));
    return cells;
  }
  bool quoted = false;  // a doubled quote turns it off and on again
  size_t start = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') {
      quoted = !quoted;
    } else if (line[i] == ',' && !quoted) {
      cells.push_back(UnquotedCell(line.substr(start, i - start)));
      start = i + 1;
    }
  }
  cells.push_back(UnquotedCell(line.substr(start)));
  if (open_quote != nullptr) *open_quote = quoted;
  return cells;
}

std::string CsvText(absl::string_view cell) { return absl::StrReplaceAll(cell, {{"\"\"", "\""}}); }

std::vector<std::string> SplitTrimmedCells(absl::string_view line) {
  std::vector<std::string> cells;
  for (absl::string_view c : SplitCsvLine(line)) cells.push_back(CsvText(c));
  return cells;
}

}  // namespace hpt
