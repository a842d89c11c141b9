// How hptctl calls the coordinator: the flags every command shares
// (--coordinator, --format, --timeout_s), the bearer token, one unary call
// with its deadline, and how a failure or a bad command line is said.
//
//   Job job;
//   if (absl::Status s = Call(stub, &JobService::Stub::GetJob, request, &job); !s.ok())
//     return Fail(s);
#ifndef HPT_HPTCTL_CALL_H_
#define HPT_HPTCTL_CALL_H_

#include <chrono>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "common/grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "hptctl/unary_call.h"
#include "proto/job_service.grpc.pb.h"

ABSL_DECLARE_FLAG(std::string, coordinator);
ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(int, timeout_s);

namespace hpt {

// Prints `status` and returns its exit code (job_format.h); for an
// unreachable coordinator, also where it was looked for.
int Fail(const absl::Status& status);
// Prints `problem` and the usage; returns the bad-command-line code.
int Usage(const std::string& problem);
// --format=json.
bool Json();
// The user's bearer token ("" without one).
std::string& Token();
// Every call carries the token, when there is one.
void Authorize(grpc::ClientContext* context);
// The token and the --timeout_s deadline.
void SetDeadline(grpc::ClientContext* context);

// One unary call with the token and the deadline.
template <typename Method, typename Request, typename Response>
absl::Status Call(JobService::Stub& stub, Method method, const Request& request,
                  Response* response) {
  return UnaryCall(stub, method, request, response, SetDeadline);
}

}  // namespace hpt

#endif  // HPT_HPTCTL_CALL_H_
