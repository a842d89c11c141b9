// LocalWorkerClient: a WorkerClient that calls a TaskExecutor in the same
// process, with the same messages the gRPC client sends. For tests and
// benchmarks that want real worker numerics without processes.
//
//   auto gpu = *GpuExecutor::Create({});
//   LocalWorkerClient client("local-gpu", gpu.get());
#ifndef HPT_COORDINATOR_DISPATCH_LOCAL_WORKER_CLIENT_H_
#define HPT_COORDINATOR_DISPATCH_LOCAL_WORKER_CLIENT_H_

#include <string>
#include <vector>

#include "common/tensor_codec.h"
#include "coordinator/dispatch/worker_client.h"
#include "workers/task_executor.h"

namespace hpt {

class LocalWorkerClient : public WorkerClient {
 public:
  // `executor` must outlive the client.
  LocalWorkerClient(std::string address, TaskExecutor* executor)
      : address_(std::move(address)), executor_(executor) {}

  const std::string& address() const override { return address_; }
  absl::StatusOr<LoadParametersResponse> LoadParameters(
      const LoadParametersHeader& header,
      const std::vector<TensorChunk>& chunks) override {
    absl::StatusOr<std::map<std::string, HostTensor>> tensors = AssembleChunks(chunks);
    if (!tensors.ok()) return tensors.status();
    return executor_->Load(header, std::move(*tensors));
  }
  absl::Status JoinGroup(const JoinGroupRequest& request) override {
    return executor_->JoinGroup(request);
  }
  absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& request) override {
    return executor_->Forward(request);
  }
  absl::StatusOr<ForwardResponse> TakeForward(ForwardRequest&& request) override {
    return executor_->TakeForward(std::move(request));
  }
  absl::StatusOr<BackwardResponse> Backward(const BackwardRequest& request) override {
    return executor_->Backward(request);
  }
  absl::StatusOr<BackwardResponse> TakeBackward(BackwardRequest&& request) override {
    return executor_->TakeBackward(std::move(request));
  }
  absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& request) override {
    return executor_->ApplyUpdate(request);
  }
  absl::StatusOr<TrainRunResponse> TrainRun(const TrainRunRequest& request) override {
    return executor_->TrainRun(request);
  }
  absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, const std::vector<std::string>& names,
      bool optimizer_state = false) override {
    return executor_->Snapshot(job_id, kDefaultChunkBytes, names, optimizer_state);
  }
  absl::StatusOr<ProbeBaselinesResponse> ProbeBaselines(
      const ProbeBaselinesRequest& request) override {
    return executor_->ProbeBaselines(request);
  }
  absl::Status Release(const std::string& job_id) override {
    return executor_->Release(job_id);
  }

 private:
  std::string address_;
  TaskExecutor* executor_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_DISPATCH_LOCAL_WORKER_CLIENT_H_
