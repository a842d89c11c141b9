// What the coordinator's and the workers' main() share once their server
// runs: a SIGINT/SIGTERM handler that shuts it down cleanly, and the
// --port_file that launchers and tests read when ports are chosen by the
// kernel.
#ifndef HPT_COMMON_SERVER_MAIN_H_
#define HPT_COMMON_SERVER_MAIN_H_

#include <functional>
#include <string>

#include "absl/status/status.h"

namespace hpt {

// Runs `shutdown` (on its own thread, never in the signal handler) on the
// first SIGINT or SIGTERM.
void ShutdownOnSignals(std::function<void()> shutdown);

// Writes "grpc=G metrics=M\n" to `path` atomically ("grpc=G metrics=M
// http=H\n" with an HTTP port, the coordinator's pages); nothing when empty.
absl::Status WritePortFile(const std::string& path, int grpc_port, int metrics_port,
                           int http_port = -1);

// Says why `program` could not start ("PROGRAM: message" on stderr) and
// returns its exit code: 2 for a bad flag (INVALID_ARGUMENT), else 1.
int StartFailure(const char* program, const absl::Status& status);

}  // namespace hpt

#endif  // HPT_COMMON_SERVER_MAIN_H_
