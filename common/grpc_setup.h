// What every server and client of the project sets up the same way: health
// checking and reflection on servers, message-size limits on both ends.
#ifndef HPT_COMMON_GRPC_SETUP_H_
#define HPT_COMMON_GRPC_SETUP_H_

#include <memory>
#include <string>

#include "grpcpp/channel.h"
#include "grpcpp/server_builder.h"

namespace hpt {

// Larger tensors are chunked (TensorChunk streams); this bounds one message.
inline constexpr int kMaxMessageBytes = 256 << 20;
// The coordinator's client-facing API: requests are specs, and replies fit
// gRPC's default client limit of 4 MiB (ListJobs leaves jobs out beyond it).
inline constexpr int kMaxApiMessageBytes = 4 << 20;

// Turns on grpc.health.v1 and server reflection (process-wide; call before
// building any server), sets message limits on `builder` and turns port
// sharing (SO_REUSEPORT) off.
void ConfigureServerBuilder(grpc::ServerBuilder& builder);

// An insecure channel (loopback by default; TLS arrives with a later issue)
// with the project's message limits.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address);

}  // namespace hpt

#endif  // HPT_COMMON_GRPC_SETUP_H_
