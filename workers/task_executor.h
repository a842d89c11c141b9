// TaskExecutor: what a worker's device does with the tasks it is sent. The
// gRPC service (worker_service.h) is written against this interface;
// GpuExecutor (LibTorch) and DeviceExecutor (simulated ReRAM and systolic
// devices) implement it. Implementations are thread-safe and run one task
// at a time.
#ifndef HPT_WORKERS_TASK_EXECUTOR_H_
#define HPT_WORKERS_TASK_EXECUTOR_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "proto/worker_service.pb.h"

namespace hpt {

class TaskExecutor {
 public:
  virtual ~TaskExecutor() = default;

  virtual std::string device_name() const = 0;
  virtual absl::StatusOr<LoadParametersResponse> Load(
      const LoadParametersHeader& header,
      std::map<std::string, HostTensor> parameters) = 0;
  virtual absl::Status JoinGroup(const JoinGroupRequest& request) = 0;
  virtual absl::StatusOr<ForwardResponse> Forward(
      const ForwardRequest& request) = 0;
  virtual absl::StatusOr<BackwardResponse> Backward(
      const BackwardRequest& request) = 0;
  // The same, free to take the request's tensor bytes instead of copying
  // them (in-process callers that are done with the request). By default,
  // the calls above.
  virtual absl::StatusOr<ForwardResponse> TakeForward(ForwardRequest&& request) {
    return Forward(request);
  }
  virtual absl::StatusOr<BackwardResponse> TakeBackward(BackwardRequest&& request) {
    return Backward(request);
  }
  virtual absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& request) = 0;
  virtual absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, int64_t max_chunk_bytes,
      const std::vector<std::string>& names = {},  // empty: all
      // Also Adam's moments ("<name>@exp_avg", "<name>@exp_avg_sq").
      bool optimizer_state = false) = 0;
  virtual absl::Status Release(const std::string& job_id) = 0;
  virtual std::vector<std::string> Jobs() const = 0;
};

}  // namespace hpt

#endif  // HPT_WORKERS_TASK_EXECUTOR_H_
