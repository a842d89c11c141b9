#include "common/grpc_setup.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/user_file.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/server_interceptor.h"
#include "proto/health.pb.h"

namespace hpt {

namespace {

// gRPC's callback server answers a request that does not parse with
// UNIMPLEMENTED and no message (CallbackUnaryHandler falls back to its
// UnimplementedUnaryReactor). For a method this process serves, that
// status can only mean the request did not parse: say so.
class UnparsedRequestInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit UnparsedRequestInterceptor(const char* method) : method_(method) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
          status.error_message().empty()) {
        methods->ModifySendStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                               RequestDidNotParse(method_)));
      }
    }
    methods->Proceed();
  }

 private:
  std::string method_;
};

class UnparsedRequestFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // Only the project's own methods (found in the generated descriptors);
    // an unknown method stays UNIMPLEMENTED.
    const std::string method = info->method() != nullptr ? info->method() : "";
    if (FindMethod(method) == nullptr) return nullptr;
    return new UnparsedRequestInterceptor(info->method());
  }
};

}  // namespace

const google::protobuf::MethodDescriptor* FindMethod(const std::string& path) {
  // "/package.Service/Method" -> "package.Service.Method"
  if (path.size() < 2 || path[0] != '/' || path.find('/', 1) == std::string::npos) {
    return nullptr;
  }
  std::string full = path.substr(1);
  full[full.find('/')] = '.';
  return google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(full);
}

std::string RequestDidNotParse(const std::string& path) {
  const google::protobuf::MethodDescriptor* method = FindMethod(path);
  return absl::StrCat("the request to ", path, " did not parse as ",
                      method != nullptr ? method->input_type()->full_name() : "its message",
                      " (a protobuf of another type, or damaged bytes)");
}

void SetServing(grpc::Server& server, const std::vector<std::string>& services, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  for (const std::string& name : services) health->SetServingStatus(name, serving);
}

void ConfigureServerBuilder(grpc::ServerBuilder& builder) {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<UnparsedRequestFactory>());
  builder.experimental().SetInterceptorCreators(std::move(creators));
  grpc::EnableDefaultHealthCheckService(true);
  // Health's descriptors in this binary: reflection describes what it lists.
  (void)grpc::health::v1::HealthCheckResponse::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  // A second server on a port in use must fail at start, not share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

namespace {

absl::Status ReadPem(const std::string& path, const char* flag, std::string* out) {
  if (path.empty()) return absl::OkStatus();
  // A PEM certificate or key is a few KB; 1 MiB holds any chain.
  absl::StatusOr<std::string> text = ReadUserTextFile(path, 1 << 20);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", text.status().message()));
  }
  *out = *std::move(text);
  if (out->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is not a PEM file"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TlsCredentials> LoadTls(const TlsFiles& files, bool require_client_certs) {
  TlsCredentials tls;
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
  return tls;
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsCredentials& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      tls.require_client_certs ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                               : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls.ca;
  options.pem_key_cert_pairs.push_back({tls.key, tls.cert});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const TlsCredentials& tls) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  if (!tls.enabled()) {
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca;
  options.pem_private_key = tls.key;
  options.pem_cert_chain = tls.cert;
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(options), args);
}

}  // namespace hpt
