#include "common/peer_role.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "grpc/grpc_security_constants.h"

namespace hpt {
namespace {

struct RoleEntry {
  PeerRole role;
  absl::string_view name;
};

constexpr RoleEntry kRoles[] = {
    {PeerRole::kCoordinator, "coordinator"},
    {PeerRole::kGpuWorker, "worker/gpu"},
    {PeerRole::kReramWorker, "worker/reram"},
    {PeerRole::kSystolicWorker, "worker/systolic"},
    {PeerRole::kClient, "client"},
};

std::string RolesText(absl::Span<const PeerRole> roles) {
  std::vector<std::string> names;
  for (PeerRole r : roles) names.push_back(std::string(RoleName(r)));
  return absl::StrJoin(names, " or ");
}

}  // namespace

absl::string_view RoleName(PeerRole role) {
  for (const RoleEntry& e : kRoles) {
    if (e.role == role) return e.name;
  }
  return "no role";
}

std::string RoleUri(PeerRole role) {
  if (role == PeerRole::kUnnamed) return "";
  return absl::StrCat(kRoleUriPrefix, RoleName(role));
}

std::optional<PeerRole> WorkerRole(DeviceKind::Name kind) {
  switch (kind) {
    case DeviceKind::gpu:
      return PeerRole::kGpuWorker;
    case DeviceKind::reram:
      return PeerRole::kReramWorker;
    case DeviceKind::systolic:
      return PeerRole::kSystolicWorker;
    default:
      return std::nullopt;
  }
}

PeerRole PeerRoleOf(const grpc::AuthContext& auth) {
  for (const grpc::string_ref& uri : auth.FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
    const absl::string_view text(uri.data(), uri.size());
    if (!absl::StartsWith(text, kRoleUriPrefix)) continue;
    const absl::string_view name = text.substr(kRoleUriPrefix.size());
    for (const RoleEntry& e : kRoles) {
      if (e.name == name) return e.role;
    }
  }
  return PeerRole::kUnnamed;
}

absl::Status CheckPeerRole(const grpc::ServerContextBase& context, const TlsCredentials& tls,
                           absl::Span<const PeerRole> allowed, absl::string_view service,
                           CertificateNeed need) {
  if (!tls.enabled()) return absl::OkStatus();
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  // With a CA set, a certificate the peer sent was verified against it.
  if (auth == nullptr || !auth->IsPeerAuthenticated()) {
    if (need == CertificateNeed::kOptional) return absl::OkStatus();
    return absl::UnauthenticatedError(
        absl::StrCat(service, " needs a certificate of the cluster's CA naming the role ",
                     RolesText(allowed), " (--tls_cert/--tls_key; deploy/make-certs makes them)"));
  }
  const PeerRole role = PeerRoleOf(*auth);
  if (std::find(allowed.begin(), allowed.end(), role) != allowed.end()) return absl::OkStatus();
  if (role == PeerRole::kUnnamed) {
    return absl::PermissionDeniedError(
        absl::StrCat(service, " answers ", RolesText(allowed),
                     ", and the caller's certificate names no "
                     "role (a URI SAN ",
                     kRoleUriPrefix,
                     "ROLE): make the cluster's certificates with "
                     "deploy/make-certs, one per role (docs/security.md)"));
  }
  return absl::PermissionDeniedError(absl::StrCat(service, " answers ", RolesText(allowed),
                                                  ", not the caller's certificate's role ",
                                                  RoleName(role), " (", RoleUri(role),
                                                  "): give this process the certificate of its "
                                                  "own role (deploy/make-certs)"));
}

}  // namespace hpt
