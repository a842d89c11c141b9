#include "common/grpc_setup.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/credentials.h"

namespace hpt {

void ConfigureServerBuilder(grpc::ServerBuilder& builder) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  // A second server on a port in use must fail at start, not share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

namespace {

struct Tls {
  std::string cert, key, ca;
  bool require_client_certs = false;
};

Tls& ProcessTls() {
  static Tls tls;
  return tls;
}

absl::Status ReadPem(const std::string& path, const char* flag, std::string* out) {
  if (path.empty()) return absl::OkStatus();
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  *out = text.str();
  if (out->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is not a PEM file"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SetTls(const TlsFiles& files, bool require_client_certs) {
  Tls tls;
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (files.enabled() && files.ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls_ca is needed with TLS: it verifies the peers' certificates");
  }
  if (absl::Status s = ReadPem(files.cert, "--tls_cert", &tls.cert); !s.ok()) return s;
  if (absl::Status s = ReadPem(files.key, "--tls_key", &tls.key); !s.ok()) return s;
  if (absl::Status s = ReadPem(files.ca, "--tls_ca", &tls.ca); !s.ok()) return s;
  tls.require_client_certs = require_client_certs;
  ProcessTls() = std::move(tls);
  return absl::OkStatus();
}

bool TlsEnabled() { return !ProcessTls().ca.empty(); }

std::shared_ptr<grpc::ServerCredentials> ServerCredentials() {
  const Tls& tls = ProcessTls();
  if (tls.ca.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      tls.require_client_certs ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                               : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.ca;
  options.pem_key_cert_pairs.push_back({tls.key, tls.cert});
  return grpc::SslServerCredentials(options);
}

bool PeerHasClusterCertificate(const grpc::ServerContextBase& context) {
  if (!TlsEnabled()) return true;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  // With a CA set, a certificate the peer sent was verified against it; a
  // verified peer has an identity (its SAN or CN).
  return auth != nullptr && auth->IsPeerAuthenticated();
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  const Tls& tls = ProcessTls();
  if (tls.ca.empty()) {
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca;
  options.pem_private_key = tls.key;
  options.pem_cert_chain = tls.cert;
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(options), args);
}

}  // namespace hpt
