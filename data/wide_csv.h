// Loader for wide CSV time series: one row per time step, one column per
// station, comma-separated, an optional header row (the format of
// ../shared/data/wind/winds.dat), and optionally a column of the rows'
// times (data/timestamps.h): the first column where it holds times, or the
// column named. Errors name the file, line and column, and the fix:
//
//   ASSIGN_OR_RETURN(TimeSeriesMatrix m, LoadWideCsv("winds.dat", {}));
#ifndef HPT_DATA_WIDE_CSV_H_
#define HPT_DATA_WIDE_CSV_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "data/series.h"
#include "data/text_file.h"

namespace hpt {

enum class CsvHeader { kAuto, kPresent, kAbsent };

// What an empty cell does (DataSpec.missing).
enum class MissingCells { kRefuse, kInterpolate, kDropRows };

// What a parse did about empty cells.
struct WideCsvGaps {
  int64_t filled = 0;   // cells interpolated
  int64_t dropped = 0;  // rows left out
};

struct WideCsvOptions {
  // kAuto: the first line is a header when any of its cells is neither a
  // number nor a time.
  CsvHeader header = CsvHeader::kAuto;
  DataLimits limits;  // LoadWideCsv: where the file may be, its size, its cells
  MissingCells missing = MissingCells::kRefuse;
  WideCsvGaps* gaps = nullptr;  // filled when given
  // The rows' times: "" reads the first column as times where its first
  // data cell is one; "none": no time column; else the header's name of
  // the column. The times must increase; the column is no station.
  std::string time_column;
};

// Parses CSV text; `source` names it in errors (a path or "<inline>").
absl::StatusOr<TimeSeriesMatrix> ParseWideCsv(const std::string& text,
                                              const std::string& source,
                                              const WideCsvOptions& options);

// Reads and parses a file. NOT_FOUND when it cannot be opened,
// INVALID_ARGUMENT naming line and column when a cell is bad.
absl::StatusOr<TimeSeriesMatrix> LoadWideCsv(const std::string& path,
                                             const WideCsvOptions& options);

}  // namespace hpt

#endif  // HPT_DATA_WIDE_CSV_H_
