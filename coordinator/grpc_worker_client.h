// GrpcWorkerClient: WorkerClient over gRPC. Every call carries a deadline;
// task calls that fail with UNAVAILABLE are retried (they are idempotent,
// keyed by job, step, micro-batch and segment), so a dropped connection
// never applies an update twice.
#ifndef HPT_COORDINATOR_GRPC_WORKER_CLIENT_H_
#define HPT_COORDINATOR_GRPC_WORKER_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "coordinator/worker_client.h"
#include "proto/worker_service.grpc.pb.h"

namespace hpt {

class GrpcWorkerClient : public WorkerClient {
 public:
  struct Options {
    absl::Duration task_deadline = absl::Minutes(5);
    absl::Duration load_deadline = absl::Minutes(10);
    int max_attempts = 3;
    // Called after each RPC with its method and final status code name.
    std::function<void(const std::string& method, const std::string& code,
                       double seconds)>
        on_rpc;
  };

  GrpcWorkerClient(std::string address, Options options);

  const std::string& address() const override { return address_; }
  absl::StatusOr<LoadParametersResponse> LoadParameters(
      const LoadParametersHeader& header,
      const std::vector<TensorChunk>& chunks) override;
  absl::Status JoinGroup(const JoinGroupRequest& request) override;
  absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& request) override;
  absl::StatusOr<BackwardResponse> Backward(
      const BackwardRequest& request) override;
  absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& request) override;
  absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, const std::vector<std::string>& names,
      bool optimizer_state = false) override;
  absl::Status Release(const std::string& job_id) override;

 private:
  template <typename Request, typename Response, typename Method>
  absl::Status CallWithRetry(const char* name, Method method,
                             const Request& request, Response* response,
                             absl::Duration deadline);

  std::string address_;
  Options options_;
  std::unique_ptr<WorkerService::Stub> stub_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_GRPC_WORKER_CLIENT_H_
