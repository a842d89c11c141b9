// WorkerServiceImpl: the gRPC face of a worker of any kind. Validates and decodes
// requests, runs each task on the device's TaskQueue (one at a time, off
// gRPC's threads), and maps absl::Status to gRPC codes. Thread-safe.
#ifndef HPT_WORKERS_WORKER_SERVICE_H_
#define HPT_WORKERS_WORKER_SERVICE_H_

#include <memory>
#include <string>

#include "common/grpc_setup.h"
#include "common/task_queue.h"
#include "proto/worker_service.grpc.pb.h"
#include "workers/task_executor.h"
#include "workers/worker_metrics.h"

namespace hpt {

class WorkerServiceImpl final : public WorkerService::CallbackService {
 public:
  // `metrics` may be null (no metrics). `tls`: the worker server's own
  // credentials; with them on, only a peer whose certificate names the
  // coordinator's role (common/peer_role.h) is answered.
  WorkerServiceImpl(DeviceKind::Name kind, TaskExecutor* executor, WorkerMetrics* metrics,
                    TlsCredentials tls = {});
  ~WorkerServiceImpl() override;

  grpc::ServerReadReactor<LoadParametersRequest>* LoadParameters(
      grpc::CallbackServerContext* context,
      LoadParametersResponse* response) override;
  grpc::ServerUnaryReactor* JoinGroup(grpc::CallbackServerContext* context,
                                      const JoinGroupRequest* request,
                                      JoinGroupResponse* response) override;
  grpc::ServerUnaryReactor* Forward(grpc::CallbackServerContext* context,
                                    const ForwardRequest* request,
                                    ForwardResponse* response) override;
  grpc::ServerUnaryReactor* Backward(grpc::CallbackServerContext* context,
                                     const BackwardRequest* request,
                                     BackwardResponse* response) override;
  grpc::ServerUnaryReactor* ApplyUpdate(grpc::CallbackServerContext* context,
                                        const ApplyUpdateRequest* request,
                                        ApplyUpdateResponse* response) override;
  grpc::ServerUnaryReactor* TrainRun(grpc::CallbackServerContext* context,
                                     const TrainRunRequest* request,
                                     TrainRunResponse* response) override;
  grpc::ServerWriteReactor<TensorChunk>* Snapshot(
      grpc::CallbackServerContext* context,
      const SnapshotRequest* request) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* context,
                                    const ReleaseRequest* request,
                                    ReleaseResponse* response) override;
  grpc::ServerUnaryReactor* ProbeBaselines(grpc::CallbackServerContext* context,
                                           const ProbeBaselinesRequest* request,
                                           ProbeBaselinesResponse* response) override;
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const GetInfoRequest* request,
                                    WorkerInfo* response) override;

 private:
  class LoadReactor;
  class SnapshotReactor;

  // Runs `task` on the device queue and finishes `reactor` with its status.
  template <typename Task>
  grpc::ServerUnaryReactor* RunOnDevice(grpc::CallbackServerContext* context,
                                        const char* name, Task task);
  // RunOnDevice for a task that answers with a cost: observed, then the
  // answer moved into `response`.
  template <typename Response, typename Task>
  grpc::ServerUnaryReactor* RunCostedTask(grpc::CallbackServerContext* context,
                                          const char* name, const std::string& job_id,
                                          Response* response, Task task);
  void ObserveCost(const CostReport& cost);
  void Observe(const char* task, double seconds, const absl::Status& status);
  // OK when the call's peer is the coordinator (or TLS is off).
  absl::Status CheckCaller(const grpc::CallbackServerContext& context) const;

  const DeviceKind::Name kind_;
  TaskExecutor* const executor_;
  WorkerMetrics* const metrics_;
  TaskQueue device_queue_;
  const TlsCredentials tls_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_WORKER_SERVICE_H_
