#include "common/user_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"

namespace hpt {
namespace {

// The kind of a stat'ed node, for messages.
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The length of the UTF-8 sequence at text[i], or 0 where none starts.
size_t SequenceLength(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead == 0) return 0;
  if (lead < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;  // overlong
    if (lead == 0xED) hi = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;  // overlong
    if (lead == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

size_t FirstNonTextByte(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceLength(text, i);
    if (n == 0) return i;
    i += n;
  }
  return absl::string_view::npos;
}

absl::Status CheckRegularFile(const std::string& path, const struct stat& st, int64_t max_bytes) {
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", KindOf(st.st_mode), ", not a regular file"));
  }
  if (st.st_size > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", st.st_size, " bytes, over the limit of ", max_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadUserFile(const std::string& path, int64_t max_bytes,
                                         const ReadFileOptions& options) {
  const std::string& shown = options.shown_as.empty() ? path : options.shown_as;
  // O_NONBLOCK: a FIFO opens at once (and is then refused) rather than
  // waiting for a writer.
  const int fd = open(path.c_str(),
                      O_RDONLY | O_NONBLOCK | O_CLOEXEC | (options.no_follow ? O_NOFOLLOW : 0));
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open '", shown, "': ",
                                            errno == ENOENT    ? "no such file"
                                            : errno == EACCES ? "permission denied"
                                            : errno == ELOOP  ? "a symlink"
                                                              : "not readable"));
  }
  struct stat st;
  absl::Status status = fstat(fd, &st) == 0
                            ? CheckRegularFile(shown, st, max_bytes)
                            : absl::NotFoundError(absl::StrCat("cannot stat '", shown, "'"));
  std::string bytes;
  size_t done = 0;
  if (status.ok()) {
    // Read to the end, not to fstat's size: a file that grew since is
    // refused once it passes max_bytes, not cut short or read without end.
    // One byte past the size (or the limit) is room to see the end.
    bytes.resize(size_t(std::min<int64_t>(st.st_size, max_bytes)) + 1);
    while (true) {
      if (done == bytes.size()) {
        if (int64_t(done) > max_bytes) {
          status = absl::InvalidArgumentError(
              absl::StrCat(shown, ": over the limit of ", max_bytes, " bytes"));
          break;
        }
        bytes.resize(size_t(std::min<int64_t>(max_bytes + 1, int64_t(done) * 2)));
      }
      if (options.before_read) {
        if (status = options.before_read(); !status.ok()) break;
      }
      // At most 64 MiB a read, so that before_read is asked often enough.
      const ssize_t n = read(fd, bytes.data() + done, std::min<size_t>(bytes.size() - done, 64 << 20));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = absl::NotFoundError(absl::StrCat("cannot read '", shown, "'"));
        break;
      }
      if (n == 0) break;
      done += size_t(n);
    }
  }
  close(fd);
  if (!status.ok()) return status;
  bytes.resize(done);
  return bytes;
}

absl::StatusOr<std::string> ReadUserTextFile(const std::string& path, int64_t max_bytes) {
  absl::StatusOr<std::string> bytes = ReadUserFile(path, max_bytes);
  if (!bytes.ok()) return bytes.status();
  const size_t bad = FirstNonTextByte(*bytes);
  if (bad != absl::string_view::npos) {
    const int64_t line = 1 + std::count(bytes->begin(), bytes->begin() + bad, '\n');
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a text file (line ", line, " holds ",
        (*bytes)[bad] == '\0' ? "a NUL byte" : "bytes that are not UTF-8", ")"));
  }
  return bytes;
}

}  // namespace hpt
