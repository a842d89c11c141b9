#include "coordinator/worker_registry_service.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/device_kind.h"
#include "common/grpc_status.h"
#include "common/peer_role.h"

namespace hpt {

grpc::ServerUnaryReactor* WorkerRegistryImpl::RegisterWorker(
    grpc::CallbackServerContext* context, const RegisterWorkerRequest* request,
    RegisterWorkerResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // A worker registers as the kind its certificate names; a kind with no
  // role is checked against every worker role here and refused by the
  // pool, which names the kinds.
  std::vector<PeerRole> allowed = {PeerRole::kGpuWorker, PeerRole::kReramWorker,
                                   PeerRole::kSystolicWorker};
  if (std::optional<PeerRole> role = WorkerRole(request->kind()); role.has_value()) {
    allowed = {*role};
  }
  absl::Status status =
      CheckPeerRole(*context, tls_, allowed,
                    absl::StrCat("RegisterWorker (as kind '", KindName(request->kind()), "')"));
  if (status.ok()) {
    status =
        pool_->Register(request->address(), request->kind(), request->name(), request->device_id());
  }
  response->set_heartbeat_interval_s(heartbeat_interval_s_);
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace hpt
