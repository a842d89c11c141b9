#include "common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace hpt {
namespace {

absl::Status CannotWrite(const std::string& path, absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat("cannot write '", path, "': ", why));
}

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// All of `bytes` to `fd`; errno's reason otherwise.
absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return CannotWrite(path, n < 0 ? std::strerror(errno) : "nothing written");
    bytes.remove_prefix(size_t(n));
  }
  return absl::OkStatus();
}

// A FIFO or a device: written straight. O_NONBLOCK only to open, so that a
// FIFO nobody reads is refused rather than waited on.
absl::Status WriteStraight(const std::string& path, absl::string_view bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return CannotWrite(path, errno == ENXIO ? "a FIFO that nothing reads" : std::strerror(errno));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  absl::Status status = WriteAll(fd, bytes, path);
  if (close(fd) != 0 && status.ok()) status = CannotWrite(path, std::strerror(errno));
  return status;
}

// A new file beside `target`, named for it, that no one else has: open's
// mode goes through the umask as a file written in place would.
int CreateTemporary(const std::string& target, std::string* temp) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    *temp = absl::StrCat(target, ".tmp-", getpid(), "-", attempt);
    const int fd = open(temp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

}  // namespace

absl::Status CheckOutputPath(const std::string& path) {
  if (path.empty()) return CannotWrite(path, "no file named");
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return CannotWrite(path, "a directory");
  const std::string dir = FolderOf(path);
  if (access(dir.c_str(), W_OK) != 0) {
    return CannotWrite(path, absl::StrCat("folder '", dir, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteOutputFile(const std::string& path, absl::string_view bytes) {
  struct stat st;
  const bool exists = stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return WriteStraight(path, bytes);
  if (absl::Status s = CheckOutputPath(path); !s.ok()) return s;
  // Through a symlink, the file it names is replaced, not the link.
  std::string target = path;
  if (char resolved[PATH_MAX]; realpath(path.c_str(), resolved) != nullptr) target = resolved;
  std::string temp;
  const int fd = CreateTemporary(target, &temp);
  if (fd < 0) return CannotWrite(path, std::strerror(errno));
  // A file replaced keeps its mode, as one rewritten in place would.
  if (exists) fchmod(fd, st.st_mode & 07777);
  absl::Status status = WriteAll(fd, bytes, path);
  if (close(fd) != 0 && status.ok()) status = CannotWrite(path, std::strerror(errno));
  if (status.ok() && rename(temp.c_str(), target.c_str()) != 0) {
    status = CannotWrite(path, std::strerror(errno));
  }
  if (!status.ok()) unlink(temp.c_str());
  return status;
}

}  // namespace hpt
