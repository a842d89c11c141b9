#include "coordinator/jobs/state_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace hpt {

absl::StatusOr<std::string> DefaultStateDir(
    const std::function<const char*(const char*)>& getenv) {
  const char* xdg = getenv("XDG_STATE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return absl::StrCat(xdg, "/hpt");
  const char* home = getenv("HOME");
  if (home != nullptr && home[0] == '/') return absl::StrCat(home, "/.local/state/hpt");
  return absl::FailedPreconditionError(
      "no default state folder: neither XDG_STATE_HOME nor HOME is an absolute path; give "
      "--state_dir=DIR (or --no_state to keep jobs in memory only)");
}

absl::Status MakeDirectories(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("the state folder's path is empty");
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string part = slash == std::string::npos ? path : path.substr(0, slash);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create the state folder '", part, "': ", std::strerror(errno)));
    }
    if (slash == std::string::npos) break;
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the state folder '", path, "' is not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace hpt
