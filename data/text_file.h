// Small text helpers the real-data loaders share: a data file into memory
// under the service's limits, and one comma-separated line into trimmed
// cells.
#ifndef HPT_DATA_TEXT_FILE_H_
#define HPT_DATA_TEXT_FILE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hpt {

// What a job's data may touch. The coordinator fills it from its flags
// (--data_root, --max_data_file_mb, --max_data_cells); in-process tools
// and tests keep the defaults: any path, 1 GiB a file, 50 M cells.
struct DataLimits {
  // Canonical folders (symlinks resolved) that data paths must lie under;
  // empty: anywhere.
  std::vector<std::string> roots;
  // How to widen the roots where this coordinator runs (its
  // --data_root_hint: the launcher's, compose's or Kubernetes' way);
  // empty: name the --data_root flag.
  std::string widen_hint;
  int64_t max_file_bytes = int64_t{1} << 30;
  // Rows x columns of a loaded series (and of COVID's per-feature grid),
  // checked before it is allocated: 50 M floats = 200 MB.
  int64_t max_cells = 50'000'000;
  // Loading gives up with DEADLINE_EXCEEDED after this moment (the
  // coordinator's --max_load_s from the load's start), and with CANCELLED
  // once `cancelled` returns true (the job was cancelled while loading).
  // Both are checked every few thousand lines and between reads.
  absl::Time deadline = absl::InfiniteFuture();
  std::function<bool()> cancelled;
};

// DEADLINE_EXCEEDED or CANCELLED naming `what` when a load must stop
// (see DataLimits::deadline and ::cancelled); OK otherwise.
absl::Status CheckLoading(absl::string_view what, const DataLimits& limits);

// CheckLoading every 4096th line: the cost of a clock read stays hidden.
inline absl::Status CheckLoadingEvery(size_t line, absl::string_view what,
                                      const DataLimits& limits) {
  return (line & 4095) == 0 ? CheckLoading(what, limits) : absl::Status();
}

// `path` with symlinks resolved, when it is under one of limits.roots and
// is a regular file (a directory when `directory`). Reads nothing: errors
// name the path as given, never its contents. NOT_FOUND when it does not
// exist, PERMISSION_DENIED outside the roots, INVALID_ARGUMENT for a FIFO,
// a device, a directory where a file is wanted (or the reverse), or a file
// over limits.max_file_bytes.
absl::StatusOr<std::string> ResolveDataPath(const std::string& path, const DataLimits& limits,
                                            bool directory = false);

// The whole of a regular file, checked as ResolveDataPath does. Opens
// without blocking (a FIFO swapped in after the check is refused, not
// waited on) and reads at most limits.max_file_bytes. A UTF-8 byte-order
// mark is dropped; UTF-16 text is refused, naming the fix.
absl::StatusOr<std::string> ReadTextFile(const std::string& path,
                                         const DataLimits& limits = DataLimits());

// INVALID_ARGUMENT naming `what` when rows x columns exceeds
// limits.max_cells (or overflows).
absl::Status CheckCells(const std::string& what, int64_t rows, int64_t columns,
                        const DataLimits& limits);

// "root1, root2" for messages; "(any)" when there are none.
// A data file that is not there: FAILED_PRECONDITION naming the path and
// the data roots.
absl::Status MissingDataFile(const std::string& path, const DataLimits& limits);
std::string DescribeRoots(const DataLimits& limits);

// One CSV cell whitespace trimmed (a line's trailing '\r' too) and without
// a pair of double quotes around it (a doubled quote inside stays doubled:
// CsvText undoes it).
absl::string_view UnquotedCell(absl::string_view cell);

// The cells of one CSV line, split at the commas outside double quotes
// (RFC 4180: "flow, m3/s" is one cell), each as UnquotedCell gives it.
// `open_quote`, where given: whether a quote opened a cell that the line
// does not close (a cell holding a line break, which is not read).
std::vector<absl::string_view> SplitCsvLine(absl::string_view line, bool* open_quote = nullptr);

// A cell's text with each doubled quote ("") made one.
std::string CsvText(absl::string_view cell);

// The cells of one CSV line as text: SplitCsvLine, then CsvText.
std::vector<std::string> SplitTrimmedCells(absl::string_view line);

}  // namespace hpt

#endif  // HPT_DATA_TEXT_FILE_H_
