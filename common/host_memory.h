// How much memory this machine can still give a process: the kernel's
// estimate (MemAvailable in /proc/meminfo, Linux 3.14 on), which counts
// free memory and the page cache it can drop. For refusing work that would
// need more than that with a clear error, where the allocation itself
// would end the process (std::bad_alloc, or the kernel's OOM killer).
//
//   if (std::optional<double> free = AvailableMemoryBytes(); free && need > *free) ...
#ifndef HPT_COMMON_HOST_MEMORY_H_
#define HPT_COMMON_HOST_MEMORY_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace hpt {

// MemAvailable from the text of /proc/meminfo, in bytes; nullopt where the
// line is missing or unreadable.
std::optional<double> ParseMemAvailable(absl::string_view meminfo);

// The same from this machine's /proc/meminfo; nullopt where it cannot be
// read (not Linux), and the caller goes on without a check.
std::optional<double> AvailableMemoryBytes();

}  // namespace hpt

#endif  // HPT_COMMON_HOST_MEMORY_H_
