#include "workers/main/worker_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace hpt {

absl::StatusOr<std::unique_ptr<TaskExecutor>> CreateExecutor(const std::string& kind,
                                                             WorkerBackendOptions options) {
  if (kind == "gpu") {
    absl::StatusOr<std::unique_ptr<GpuExecutor>> executor = GpuExecutor::Create(options.gpu);
    if (!executor.ok()) return executor.status();
    return std::unique_ptr<TaskExecutor>(std::move(*executor));
  }
  if (kind == "reram" || kind == "systolic") {
    options.device.kind = kind;
    absl::StatusOr<std::unique_ptr<DeviceExecutor>> executor =
        DeviceExecutor::Create(options.device);
    if (!executor.ok()) return executor.status();
    return std::unique_ptr<TaskExecutor>(std::move(*executor));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--kind '", kind, "' is not gpu, reram or systolic"));
}

absl::StatusOr<std::unique_ptr<WorkerServer>> StartWorker(WorkerServer::Options options,
                                                          WorkerBackendOptions backend) {
  absl::StatusOr<std::unique_ptr<TaskExecutor>> executor =
      CreateExecutor(options.kind, std::move(backend));
  if (!executor.ok()) return executor.status();
  return WorkerServer::Start(std::move(options), std::move(*executor));
}

}  // namespace hpt
