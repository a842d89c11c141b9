#include "common/tls_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "common/grpc_setup.h"

ABSL_FLAG(std::string, tls_cert, "", "TLS: this process's certificate (PEM); empty: plaintext.");
ABSL_FLAG(std::string, tls_key, "", "TLS: this process's private key (PEM).");
ABSL_FLAG(std::string, tls_ca, "",
          "TLS: the CA certificate (PEM) that signed the peers' certificates.");

namespace hpt {

TlsFiles TlsFlagFiles() {
  return {absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key), absl::GetFlag(FLAGS_tls_ca)};
}

absl::StatusOr<TlsCredentials> TlsFromFlags(bool require_client_certs) {
  return LoadTls(TlsFlagFiles(), require_client_certs);
}

}  // namespace hpt
