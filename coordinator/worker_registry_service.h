// WorkerRegistryImpl: the coordinator's gRPC face to its workers. A worker
// registers with its address and kind, holding a certificate of the
// cluster's CA that names a worker of that kind when TLS is on
// (common/peer_role.h), and is told how often to heartbeat.
#ifndef HPT_COORDINATOR_WORKER_REGISTRY_SERVICE_H_
#define HPT_COORDINATOR_WORKER_REGISTRY_SERVICE_H_

#include "common/grpc_setup.h"
#include "coordinator/dispatch/worker_pool.h"
#include "proto/worker_service.grpc.pb.h"

namespace hpt {

class WorkerRegistryImpl final : public WorkerRegistry::CallbackService {
 public:
  // `tls`: the registry server's own credentials; with them on, only a
  // peer whose certificate names the role of the kind it registers does.
  WorkerRegistryImpl(WorkerPool* pool, double heartbeat_interval_s, TlsCredentials tls)
      : pool_(pool), heartbeat_interval_s_(heartbeat_interval_s), tls_(std::move(tls)) {}

  grpc::ServerUnaryReactor* RegisterWorker(grpc::CallbackServerContext* context,
                                           const RegisterWorkerRequest* request,
                                           RegisterWorkerResponse* response) override;

 private:
  WorkerPool* const pool_;
  const double heartbeat_interval_s_;
  const TlsCredentials tls_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_WORKER_REGISTRY_SERVICE_H_
