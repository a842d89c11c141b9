// A file written where a person says: hptctl's --out (a report, a page, a
// sweep's tables, an exported model, a prediction), a server's
// --port_file. Refused in one line naming the path and why: a folder that
// is missing or not writable, a directory where the file should be, a
// full disk. A regular file is written beside itself (keeping its mode)
// and renamed into place, so a write that fails leaves no half file and
// keeps the old one, and a reader polling for it never sees half of it; a
// FIFO or a device (/dev/stdout, /dev/null) is written straight.
// FAILED_PRECONDITION (hptctl's exit 3).
#ifndef HPT_COMMON_OUTPUT_FILE_H_
#define HPT_COMMON_OUTPUT_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hpt {

// Whether `path` can be written, checked before any work that leads to it.
absl::Status CheckOutputPath(const std::string& path);

absl::Status WriteOutputFile(const std::string& path, absl::string_view bytes);

}  // namespace hpt

#endif  // HPT_COMMON_OUTPUT_FILE_H_
