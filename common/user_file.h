// A file a person named on a command line or in a flag (a job spec, a GPU
// profile, a token file, an input array), read whole and bounded. What is
// not a regular file (a directory, a FIFO, a device) is refused without
// blocking on it, as is a file over `max_bytes`; a text file is also
// refused where it holds a NUL or bytes that are not UTF-8. Errors name the
// path and, for text, the line; they never quote the file's contents.
//
//   ASSIGN_OR_RETURN(std::string spec, ReadUserTextFile(path, 1 << 20));
#ifndef HPT_COMMON_USER_FILE_H_
#define HPT_COMMON_USER_FILE_H_

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hpt {

// How a caller with more rules than a person's file reads one (the data
// loaders, data/text_file.h).
struct ReadFileOptions {
  // Refuse a symlink as the last component (O_NOFOLLOW): the caller has
  // resolved the path itself and checked where it leads.
  bool no_follow = false;
  // The path as messages name it; empty: `path` itself.
  std::string shown_as;
  // Asked before each read; a status that is not OK stops the read and is
  // returned (a deadline, a cancelled job).
  std::function<absl::Status()> before_read;
};

// NOT_FOUND when it cannot be opened or read; INVALID_ARGUMENT when it is
// not a regular file or is over max_bytes, even where it grows while read.
absl::StatusOr<std::string> ReadUserFile(const std::string& path, int64_t max_bytes,
                                         const ReadFileOptions& options = {});
absl::StatusOr<std::string> ReadUserTextFile(const std::string& path, int64_t max_bytes);

// INVALID_ARGUMENT naming `path` and what the node is, unless `st` is a
// regular file of at most max_bytes.
absl::Status CheckRegularFile(const std::string& path, const struct stat& st, int64_t max_bytes);

// The offset of the first byte at which `text` stops being UTF-8 text (a
// NUL, a stray or truncated sequence, an overlong form, a surrogate, a
// code point past U+10FFFF); npos when all of it is.
size_t FirstNonTextByte(absl::string_view text);

}  // namespace hpt

#endif  // HPT_COMMON_USER_FILE_H_
