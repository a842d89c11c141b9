// TaskExecutor: what a worker's device does with the tasks it is sent
// (common/worker_tasks.h), plus loading and snapshots in whole tensors. The
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
#include "common/worker_tasks.h"
#include "proto/worker_service.pb.h"

namespace hpt {

class TaskExecutor : public WorkerTasks {
 public:
  virtual std::string device_name() const = 0;
  // The physical device it computes on, for the coordinator to tell which
  // workers share one (a GPU's UUID); empty: a device of its own.
  virtual std::string device_id() const { return ""; }
  virtual absl::StatusOr<LoadParametersResponse> Load(
      const LoadParametersHeader& header,
      std::map<std::string, HostTensor> parameters) = 0;
  virtual absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, int64_t max_chunk_bytes,
      const std::vector<std::string>& names = {},  // empty: all
      // Also Adam's moments (task_book.h kExpAvgSuffix, kExpAvgSqSuffix).
      bool optimizer_state = false) = 0;
  virtual std::vector<std::string> Jobs() const = 0;
  // Times a model's full step under each GPU baseline (GPU workers only).
  virtual absl::StatusOr<ProbeBaselinesResponse> ProbeBaselines(
      const ProbeBaselinesRequest& request) {
    (void)request;
    return absl::FailedPreconditionError("only GPU workers probe GPU baselines");
  }
};

}  // namespace hpt

#endif  // HPT_WORKERS_TASK_EXECUTOR_H_
