// WorkerTasks: the tasks a worker runs for the coordinator, as both sides
// declare them: the coordinator's WorkerClient (coordinator/dispatch/worker_client.h)
// calls them, a worker's TaskExecutor (workers/task_executor.h) runs them.
// Task calls are idempotent, keyed by (job, step, micro-batch, segment):
// a retry never applies an update twice (workers/task_book.h).
//
// Loading parameters and taking snapshots are not here: the two sides see
// those in different forms (the client sends and receives the wire's
// chunks, the executor takes and gives whole tensors), so each interface
// declares its own.
#ifndef HPT_COMMON_WORKER_TASKS_H_
#define HPT_COMMON_WORKER_TASKS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/worker_service.pb.h"

namespace hpt {

// The chunk name of the normalised series a GPU load with
// LoadParametersHeader.samples sends.
inline constexpr char kSamplesTensor[] = "#samples";

class WorkerTasks {
 public:
  virtual ~WorkerTasks() = default;

  // Joins the job's data-parallel group (GPU workers).
  virtual absl::Status JoinGroup(const JoinGroupRequest& request) = 0;
  virtual absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& request) = 0;
  virtual absl::StatusOr<BackwardResponse> Backward(const BackwardRequest& request) = 0;
  // The same for a caller that is done with the request: an in-process
  // worker takes its tensor bytes instead of copying them. By default, the
  // calls above (over gRPC the request is serialised either way).
  virtual absl::StatusOr<ForwardResponse> TakeForward(ForwardRequest&& request) {
    return Forward(request);
  }
  virtual absl::StatusOr<BackwardResponse> TakeBackward(BackwardRequest&& request) {
    return Backward(request);
  }
  virtual absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(const ApplyUpdateRequest& request) = 0;
  // A run of whole steps on the samples resident on the worker (GPU
  // workers; the rest answer UNIMPLEMENTED, and the caller takes steps
  // task by task instead).
  virtual absl::StatusOr<TrainRunResponse> TrainRun(const TrainRunRequest& request) {
    (void)request;
    return absl::UnimplementedError("this worker trains task by task, not in runs");
  }
  // Drops the job's state on the worker; an unknown job is a no-op.
  virtual absl::Status Release(const std::string& job_id) = 0;
};

}  // namespace hpt

#endif  // HPT_COMMON_WORKER_TASKS_H_
