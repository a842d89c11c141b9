// The one place absl::Status and grpc::Status are converted. Codes map one
// to one (both use the canonical codes); messages pass through unchanged.
#ifndef HPT_COMMON_GRPC_STATUS_H_
#define HPT_COMMON_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/server_callback.h"
#include "grpcpp/support/status.h"

namespace hpt {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// A streaming call refused before it starts: `Reactor` is the call's
// grpc::ServerReadReactor<T> or grpc::ServerWriteReactor<T>. It finishes
// with `status` at once and deletes itself when gRPC is done with it.
template <typename Reactor>
class Refused : public Reactor {
 public:
  explicit Refused(const absl::Status& status) { this->Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace hpt

#endif  // HPT_COMMON_GRPC_STATUS_H_
