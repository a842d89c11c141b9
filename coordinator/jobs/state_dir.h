// Where a coordinator keeps its state (the job registry, checkpoint files,
// trained models) when --state_dir is not given: durable by default, as
// Prometheus stores to data/ unless told otherwise. Running without state
// is the explicit --no_state.
//
//   ASSIGN_OR_RETURN(std::string dir, DefaultStateDir(std::getenv));
//   RETURN_IF_ERROR(MakeDirectories(dir));
#ifndef HPT_COORDINATOR_JOBS_STATE_DIR_H_
#define HPT_COORDINATOR_JOBS_STATE_DIR_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace hpt {

// $XDG_STATE_HOME/hpt when that is an absolute path (the XDG Base Directory
// Specification), else $HOME/.local/state/hpt. FAILED_PRECONDITION when
// neither variable helps. `getenv` reads the environment (injectable).
absl::StatusOr<std::string> DefaultStateDir(
    const std::function<const char*(const char*)>& getenv);

// Creates `path` and its missing parents (mode 0700); an error names the
// folder that could not be made.
absl::Status MakeDirectories(const std::string& path);

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_STATE_DIR_H_
