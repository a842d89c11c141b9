#include "hptctl/call.h"

#include <iostream>

#include "absl/flags/flag.h"
#include "hptctl/job_format.h"
#include "hptctl/usage.h"

ABSL_FLAG(std::string, coordinator, "127.0.0.1:50051",
          "Coordinator host:port (default: $HPT_COORDINATOR, else 127.0.0.1:50051).");
ABSL_FLAG(std::string, format, "text",
          "Output format: text or json (trace: also chrome, Chrome trace-event JSON).");
ABSL_FLAG(int, timeout_s, 30, "Deadline of each unary call, seconds.");

namespace hpt {

int Fail(const absl::Status& status) {
  const int code = PrintFailure(status);
  if (status.code() == absl::StatusCode::kUnavailable) {
    std::cerr << "hptctl: is the coordinator running at " << absl::GetFlag(FLAGS_coordinator)
              << "? (start it with ./hpt up, or give its address: --coordinator=HOST:PORT or "
                 "$HPT_COORDINATOR)"
              << std::endl;
  }
  return code;
}

int Usage(const std::string& problem) {
  std::cerr << "hptctl: " << problem << "\n" << kUsage << std::endl;
  return kExitUsage;
}

bool Json() { return absl::GetFlag(FLAGS_format) == "json"; }

std::string& Token() {
  static std::string token;
  return token;
}

// Every call carries the user's token, when there is one.
void Authorize(grpc::ClientContext* context) {
  if (!Token().empty()) context->AddMetadata("authorization", "Bearer " + Token());
}

void SetDeadline(grpc::ClientContext* context) {
  Authorize(context);
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(absl::GetFlag(FLAGS_timeout_s)));
}

}  // namespace hpt
