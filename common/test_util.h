// Helpers for tests that start the project's real binaries: locating them
// in Bazel's runfiles, spawning them with logs, reading the ports they bound
// (--port_file) and running hptctl.
#ifndef HPT_COMMON_TEST_UTIL_H_
#define HPT_COMMON_TEST_UTIL_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hpt {
namespace testing {

// Path of a binary of this workspace, e.g. "coordinator/hpt_coordinator".
std::string RunfilePath(const std::string& workspace_relative);

// A child process, killed (SIGTERM, then SIGKILL) when this object goes.
class ChildProcess {
 public:
  static absl::StatusOr<ChildProcess> Start(const std::vector<std::string>& argv,
                                            const std::string& log_path);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Sends SIGTERM and waits; returns the exit status (or -signal).
  int Stop();
  bool Running();

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
};

struct Ports {
  int grpc = 0;
  int metrics = 0;
};

// Waits for a "grpc=P metrics=Q" port file; fails after `timeout` or when
// `process` exits first.
absl::StatusOr<Ports> WaitForPortFile(const std::string& path,
                                      ChildProcess& process,
                                      absl::Duration timeout);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line and captures its output.
CommandResult RunCommand(const std::string& command_line);

// A fresh directory under TEST_TMPDIR.
std::string MakeTempDir(const std::string& name);

// The cluster's CA and one certificate per role in `dir`, made by
// deploy/make-certs with Debian's openssl (the test needs
// "//deploy:make-certs" in its data): dir/ca.pem, and dir/ROLE/cert.pem,
// key.pem, ca.pem for coordinator, worker-gpu, worker-reram,
// worker-systolic and client, servers named 127.0.0.1 and localhost.
absl::Status MakeClusterCertificates(const std::string& dir);

// `bytes` written to dir/name; its path.
std::string WriteTestFile(const std::string& dir, const std::string& name,
                          const std::string& bytes);

// HTTP GET of http://127.0.0.1:port/path; the body, or an error.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

// A listening TCP socket of this machine: its local address as the kernel
// prints it (hex; 0100007F is 127.0.0.1), port and socket inode.
struct Listener {
  std::string address;
  int port = 0;
  std::string inode;
};
// Every listening socket in /proc/net/tcp and /proc/net/tcp6.
std::vector<Listener> Listeners();

// TCP ports process `pid` listens on (IPv4 and IPv6), from its socket fds
// and /proc/net/tcp{,6}; sorted.
std::vector<int> ListeningPorts(pid_t pid);

}  // namespace testing
}  // namespace hpt

#endif  // HPT_COMMON_TEST_UTIL_H_
