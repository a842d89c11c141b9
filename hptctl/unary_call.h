// One unary call of hptctl's: the request's text checked first
// (request_text.h), then the call on a context that `prepare` readies (the
// token, a deadline), its gRPC status as an absl::Status.
//
//   WhatIfResponse response;
//   absl::Status s = UnaryCall(stub, &JobService::Stub::WhatIf, request, &response,
//                              options.prepare);
#ifndef HPT_HPTCTL_UNARY_CALL_H_
#define HPT_HPTCTL_UNARY_CALL_H_

#include "absl/status/status.h"
#include "common/grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "hptctl/request_text.h"

namespace hpt {

template <typename Stub, typename Method, typename Request, typename Response, typename Prepare>
absl::Status UnaryCall(Stub& stub, Method method, const Request& request, Response* response,
                       const Prepare& prepare) {
  if (absl::Status s = CheckRequestText(request); !s.ok()) return s;
  grpc::ClientContext context;
  prepare(&context);
  return FromGrpcStatus((stub.*method)(&context, request, response));
}

}  // namespace hpt

#endif  // HPT_HPTCTL_UNARY_CALL_H_
