#include "common/server_main.h"

#include <csignal>
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/output_file.h"

namespace hpt {
namespace {

std::function<void()>* g_shutdown = nullptr;

void HandleSignal(int) {
  // Shutting a server down joins threads: do it off the signal handler.
  if (g_shutdown != nullptr) std::thread(*g_shutdown).detach();
}

}  // namespace

void ShutdownOnSignals(std::function<void()> shutdown) {
  g_shutdown = new std::function<void()>(std::move(shutdown));  // lives for the process
  std::signal(SIGINT, HandleSignal);
  std::signal(SIGTERM, HandleSignal);
}

absl::Status WritePortFile(const std::string& path, int grpc_port, int metrics_port,
                           int http_port) {
  if (path.empty()) return absl::OkStatus();
  return WriteOutputFile(
      path, absl::StrCat("grpc=", grpc_port, " metrics=", metrics_port,
                         http_port >= 0 ? absl::StrCat(" http=", http_port) : "", "\n"));
}

int StartFailure(const char* program, const absl::Status& status) {
  std::cerr << program << ": " << status.message() << std::endl;
  return absl::IsInvalidArgument(status) ? 2 : 1;
}

}  // namespace hpt
