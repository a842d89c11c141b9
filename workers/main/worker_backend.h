// The executor behind a worker of each kind, and a worker started with it:
// LibTorch (workers/gpu) for gpu, a simulated device (workers/sim) for
// reram and systolic. The one place that knows every backend.
//
//   WorkerServer::Options o;
//   o.kind = DeviceKind::systolic;
//   ASSIGN_OR_RETURN(auto server, StartWorker(o, WorkerBackendOptions()));
#ifndef HPT_WORKERS_MAIN_WORKER_BACKEND_H_
#define HPT_WORKERS_MAIN_WORKER_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/sim/device_executor.h"
#include "workers/task_executor.h"
#include "workers/worker_server.h"

namespace hpt {

struct WorkerBackendOptions {
  GpuExecutor::Options gpu;        // kind gpu
  DeviceExecutor::Options device;  // kinds reram and systolic
};

// INVALID_ARGUMENT for DEVICE_KIND_UNSPECIFIED; otherwise the backend's own
// error.
absl::StatusOr<std::unique_ptr<TaskExecutor>> CreateExecutor(DeviceKind::Name kind,
                                                             WorkerBackendOptions options);

// CreateExecutor for options.kind, served by a WorkerServer.
absl::StatusOr<std::unique_ptr<WorkerServer>> StartWorker(WorkerServer::Options options,
                                                          WorkerBackendOptions backend);

}  // namespace hpt

#endif  // HPT_WORKERS_MAIN_WORKER_BACKEND_H_
