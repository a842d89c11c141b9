#include "workers/main/worker_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/device_kind.h"

namespace hpt {

absl::StatusOr<std::unique_ptr<TaskExecutor>> CreateExecutor(DeviceKind::Name kind,
                                                             WorkerBackendOptions options) {
  if (absl::Status known = CheckWorkerKind(kind); !known.ok()) return known;
  switch (kind) {
    case DeviceKind::gpu: {
      absl::StatusOr<std::unique_ptr<GpuExecutor>> executor = GpuExecutor::Create(options.gpu);
      if (!executor.ok()) return executor.status();
      return std::unique_ptr<TaskExecutor>(std::move(*executor));
    }
    case DeviceKind::reram:
    case DeviceKind::systolic: {
      options.device.kind = kind;
      absl::StatusOr<std::unique_ptr<DeviceExecutor>> executor =
          DeviceExecutor::Create(options.device);
      if (!executor.ok()) return executor.status();
      return std::unique_ptr<TaskExecutor>(std::move(*executor));
    }
    default:  // a kind added to DeviceKind without a backend here
      return absl::UnimplementedError(absl::StrCat("no worker backend for kind ", KindName(kind)));
  }
}

absl::StatusOr<std::unique_ptr<WorkerServer>> StartWorker(WorkerServer::Options options,
                                                          WorkerBackendOptions backend) {
  absl::StatusOr<std::unique_ptr<TaskExecutor>> executor =
      CreateExecutor(options.kind, std::move(backend));
  if (!executor.ok()) return executor.status();
  return WorkerServer::Start(std::move(options), std::move(*executor));
}

}  // namespace hpt
