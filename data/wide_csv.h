// Loader for wide CSV time series: one row per time step, one column per
// station, comma-separated, an optional header row (the format of
// ../shared/data/wind/winds.dat). Errors name the file, line and column:
//
//   ASSIGN_OR_RETURN(TimeSeriesMatrix m, LoadWideCsv("winds.dat", {}));
#ifndef HPT_DATA_WIDE_CSV_H_
#define HPT_DATA_WIDE_CSV_H_

#include <string>

#include "absl/status/statusor.h"
#include "data/series.h"
#include "data/text_file.h"

namespace hpt {

enum class CsvHeader { kAuto, kPresent, kAbsent };

struct WideCsvOptions {
  // kAuto: the first line is a header when any of its cells is not a number.
  CsvHeader header = CsvHeader::kAuto;
  DataLimits limits;  // LoadWideCsv: where the file may be, its size, its cells
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
