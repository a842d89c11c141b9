// The --tls_cert, --tls_key and --tls_ca flags every binary takes
// (grpc_setup.h TlsFiles), defined once.
#ifndef HPT_COMMON_TLS_FLAGS_H_
#define HPT_COMMON_TLS_FLAGS_H_

#include "absl/status/statusor.h"
#include "common/grpc_setup.h"

namespace hpt {

// The flags' credentials (LoadTls), for the servers' and clients' options;
// call after parsing flags.
absl::StatusOr<TlsCredentials> TlsFromFlags(bool require_client_certs);
// The flags' files as given (for servers outside gRPC, e.g. HTTPS pages).
TlsFiles TlsFlagFiles();

}  // namespace hpt

#endif  // HPT_COMMON_TLS_FLAGS_H_
