// The one place absl::Status and grpc::Status are converted. Codes map one
// to one (both use the canonical codes); messages pass through unchanged.
#ifndef HPT_COMMON_GRPC_STATUS_H_
#define HPT_COMMON_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace hpt {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace hpt

#endif  // HPT_COMMON_GRPC_STATUS_H_
