// Small text helpers the real-data loaders share: a whole file into memory,
// and one comma-separated line into trimmed cells.
#ifndef HPT_DATA_TEXT_FILE_H_
#define HPT_DATA_TEXT_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hpt {

// NOT_FOUND "<path>: cannot open" when the file cannot be read.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

// The cells of one CSV line (no quoting), whitespace trimmed, a trailing
// '\r' dropped.
std::vector<std::string> SplitTrimmedCells(absl::string_view line);

}  // namespace hpt

#endif  // HPT_DATA_TEXT_FILE_H_
