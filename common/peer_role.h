// The role a cluster certificate proves: which process of an HpT cluster
// its holder is. Each certificate names one role as a URI subject
// alternative name, "spiffe://hpt/<role>" (the SPIFFE ID form, so mesh and
// Kubernetes tooling read it as an identity):
//
//   spiffe://hpt/coordinator        the coordinator (and its operator tools)
//   spiffe://hpt/worker/gpu         a GPU worker; worker/reram, worker/systolic
//   spiffe://hpt/client             a user's hptctl or gRPC client
//
// `deploy/make-certs` makes one per role. The servers check them:
// WorkerService answers only the coordinator, RegisterWorker takes a
// worker certificate of the kind it registers, and JobService refuses a
// certificate of any role but client or coordinator (a client without a
// certificate is asked for its bearer token instead).
#ifndef HPT_COMMON_PEER_ROLE_H_
#define HPT_COMMON_PEER_ROLE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/grpc_setup.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"
#include "proto/work.pb.h"

namespace hpt {

enum class PeerRole {
  kUnnamed,  // a certificate the CA signed that names no role
  kCoordinator,
  kGpuWorker,
  kReramWorker,
  kSystolicWorker,
  kClient,
};

inline constexpr absl::string_view kRoleUriPrefix = "spiffe://hpt/";

// "worker/gpu"; "no role" for kUnnamed.
absl::string_view RoleName(PeerRole role);
// "spiffe://hpt/worker/gpu"; empty for kUnnamed.
std::string RoleUri(PeerRole role);
// The role of a worker of `kind`; none for DEVICE_KIND_UNSPECIFIED.
std::optional<PeerRole> WorkerRole(DeviceKind::Name kind);

// The role the peer's verified certificate names: the first URI SAN under
// kRoleUriPrefix that names a role; kUnnamed when there is none.
PeerRole PeerRoleOf(const grpc::AuthContext& auth);

// How a service treats a caller that sends no certificate.
enum class CertificateNeed { kRequired, kOptional };

// OK when TLS is off (nothing to check), or when the call's peer sent a
// certificate the CA signed whose role is in `allowed`. Otherwise
// UNAUTHENTICATED (no verified certificate, where `need` is kRequired) or
// PERMISSION_DENIED, with a message naming `service`, the role the
// certificate names and the fix. kOptional lets a caller without a
// certificate through (JobService asks those for tokens).
absl::Status CheckPeerRole(const grpc::ServerContextBase& context, const TlsCredentials& tls,
                           absl::Span<const PeerRole> allowed, absl::string_view service,
                           CertificateNeed need = CertificateNeed::kRequired);

}  // namespace hpt

#endif  // HPT_COMMON_PEER_ROLE_H_
