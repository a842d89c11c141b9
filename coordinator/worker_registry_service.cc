#include "coordinator/worker_registry_service.h"

#include "common/grpc_status.h"

namespace hpt {

grpc::ServerUnaryReactor* WorkerRegistryImpl::RegisterWorker(
    grpc::CallbackServerContext* context, const RegisterWorkerRequest* request,
    RegisterWorkerResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // Only a process holding a certificate of the cluster's CA joins it.
  if (!PeerHasClusterCertificate(*context, tls_)) {
    reactor->Finish(ToGrpcStatus(absl::UnauthenticatedError(
        "RegisterWorker needs the cluster's client certificate "
        "(worker --tls_cert/--tls_key signed by the coordinator's --tls_ca)")));
    return reactor;
  }
  absl::Status status = pool_->Register(request->address(), request->kind(), request->name(),
                                        request->device_id());
  response->set_heartbeat_interval_s(heartbeat_interval_s_);
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace hpt
