// WorkerClient: how the coordinator's core talks to one worker: the tasks
// (common/worker_tasks.h), loading and snapshots in the wire's chunks, and
// aborting calls. The trainer sees only this interface, so it is tested without gRPC; GrpcWorkerClient
// (grpc_worker_client.h) is the real one.
#ifndef HPT_COORDINATOR_DISPATCH_WORKER_CLIENT_H_
#define HPT_COORDINATOR_DISPATCH_WORKER_CLIENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/worker_tasks.h"
#include "proto/worker_service.pb.h"

namespace hpt {

class WorkerClient : public WorkerTasks {
 public:
  virtual const std::string& address() const = 0;
  virtual absl::StatusOr<LoadParametersResponse> LoadParameters(
      const LoadParametersHeader& header,
      const std::vector<TensorChunk>& chunks) = 0;
  // The job's parameters on the worker; `names` non-empty: only those.
  // `optimizer_state`: also the optimizer's moments (checkpoints).
  virtual absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, const std::vector<std::string>& names,
      bool optimizer_state = false) = 0;

  // GPU workers: a model's full step timed under each GPU baseline
  // (workers/gpu/baseline_probe.h).
  virtual absl::StatusOr<ProbeBaselinesResponse> ProbeBaselines(
      const ProbeBaselinesRequest& request) {
    (void)request;
    return absl::UnimplementedError("this worker client does not probe baselines");
  }

  // Ends every call in flight, and fails every later one, with `reason`
  // (the job was cancelled; the worker stopped answering). Thread-safe.
  virtual void Abort(const absl::Status& reason) { (void)reason; }
};

// `worker`'s address, or "" for none.
inline std::string AddressOf(const WorkerClient* worker) {
  return worker != nullptr ? worker->address() : "";
}

}  // namespace hpt

#endif  // HPT_COORDINATOR_DISPATCH_WORKER_CLIENT_H_
