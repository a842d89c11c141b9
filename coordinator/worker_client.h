// WorkerClient: how the coordinator's core talks to one worker. The trainer
// sees only this interface, so it is tested without gRPC; GrpcWorkerClient
// (grpc_worker_client.h) is the real one.
#ifndef HPT_COORDINATOR_WORKER_CLIENT_H_
#define HPT_COORDINATOR_WORKER_CLIENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/worker_service.pb.h"

namespace hpt {

class WorkerClient {
 public:
  virtual ~WorkerClient() = default;

  virtual const std::string& address() const = 0;
  virtual absl::StatusOr<LoadParametersResponse> LoadParameters(
      const LoadParametersHeader& header,
      const std::vector<TensorChunk>& chunks) = 0;
  virtual absl::Status JoinGroup(const JoinGroupRequest& request) = 0;
  virtual absl::StatusOr<ForwardResponse> Forward(
      const ForwardRequest& request) = 0;
  virtual absl::StatusOr<BackwardResponse> Backward(
      const BackwardRequest& request) = 0;
  // The same for a caller that is done with the request: an in-process
  // worker takes its tensor bytes instead of copying them. By default, the
  // calls above (over gRPC the request is serialised either way).
  virtual absl::StatusOr<ForwardResponse> TakeForward(ForwardRequest&& request) {
    return Forward(request);
  }
  virtual absl::StatusOr<BackwardResponse> TakeBackward(BackwardRequest&& request) {
    return Backward(request);
  }
  virtual absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& request) = 0;
  // The job's parameters on the worker; `names` non-empty: only those.
  // `optimizer_state`: also the optimizer's moments (checkpoints).
  virtual absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, const std::vector<std::string>& names,
      bool optimizer_state = false) = 0;
  virtual absl::Status Release(const std::string& job_id) = 0;

  // Ends every call in flight, and fails every later one, with `reason`
  // (the job was cancelled; the worker stopped answering). Thread-safe.
  virtual void Abort(const absl::Status& reason) { (void)reason; }
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_WORKER_CLIENT_H_
