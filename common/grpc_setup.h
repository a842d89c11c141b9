// What every server and client of the project sets up the same way: health
// checking and reflection on servers, message-size limits on both ends.
#ifndef HPT_COMMON_GRPC_SETUP_H_
#define HPT_COMMON_GRPC_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/server_context.h"

namespace hpt {

// Larger tensors are chunked (TensorChunk streams); this bounds one message.
inline constexpr int kMaxMessageBytes = 256 << 20;
// The coordinator's client-facing API: requests are specs, and replies fit
// gRPC's default client limit of 4 MiB (ListJobs leaves jobs out beyond it).
inline constexpr int kMaxApiMessageBytes = 4 << 20;

// Turns on grpc.health.v1 and server reflection (process-wide; call before
// building any server), sets message limits on `builder`, turns port
// sharing (SO_REUSEPORT) off, and makes a request that does not parse
// INVALID_ARGUMENT with a message (gRPC's callback server would answer
// UNIMPLEMENTED with none).
void ConfigureServerBuilder(grpc::ServerBuilder& builder);

// Marks `services` (full names, "hpt.JobService") and the server as a
// whole ("") SERVING or NOT_SERVING in grpc.health.v1: Kubernetes' gRPC
// probes and `grpc_health_probe -service` ask by service name.
void SetServing(grpc::Server& server, const std::vector<std::string>& services, bool serving);

// The method a call path ("/hpt.JobService/GetJob") names among the
// compiled-in protos, or null.
const google::protobuf::MethodDescriptor* FindMethod(const std::string& path);
// "the request to PATH did not parse as TYPE (...)".
std::string RequestDidNotParse(const std::string& path);

// TLS files as flags name them (--tls_cert, --tls_key, --tls_ca). All
// empty: plaintext, for the loopback demo. PEM files:
//   cert, key  this process's certificate and key (servers must have them;
//              a client presents them when the server asks: mutual TLS);
//   ca         the CA that signed the peers' certificates: clients verify
//              servers with it, servers verify client certificates with it.
struct TlsFiles {
  std::string cert, key, ca;
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// The TLS one server or client uses: the files' PEM text, read once. Each
// server and client takes its own in its options, so one process can serve
// TLS and plaintext side by side. Default: plaintext.
struct TlsCredentials {
  std::string cert, key, ca;  // PEM text
  // Servers refuse clients without a certificate the CA signed (workers);
  // otherwise a certificate is asked for and checked when sent (the
  // coordinator, whose users authenticate with tokens).
  bool require_client_certs = false;
  bool enabled() const { return !ca.empty(); }
};

// Reads the files (errors name the flag, never the contents).
absl::StatusOr<TlsCredentials> LoadTls(const TlsFiles& files, bool require_client_certs);

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsCredentials& tls);

// A channel with `tls` (plaintext when off) and the project's message
// limits.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const TlsCredentials& tls);

}  // namespace hpt

#endif  // HPT_COMMON_GRPC_SETUP_H_
