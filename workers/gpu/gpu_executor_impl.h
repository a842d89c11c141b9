// The GPU executor's state (gpu_executor.h), shared by its files:
// gpu_executor.cc (creating it, loading jobs, groups, runs, snapshots) and
// gpu_executor_tasks.cc (task-by-task forward, backward and update).
// Internal to the GPU executor: it includes LibTorch.
#ifndef HPT_WORKERS_GPU_EXECUTOR_IMPL_H_
#define HPT_WORKERS_GPU_EXECUTOR_IMPL_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/tensor_codec.h"
#include "devices/cost_settings.h"
#include "devices/work_cost.h"
#include "workers/gpu/device_meter.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/gpu/gpu_run.h"
#include "workers/gpu/gpu_session.h"
#include "workers/gpu/guarded.h"
#include "workers/gpu/kernel_recorder.h"
#include "workers/task_book.h"

namespace hpt {

// Decodes a wire tensor into a device tensor, checking its shape.
inline absl::StatusOr<torch::Tensor> DecodeBatch(const Tensor& proto,
                                          const std::string& field,
                                          int64_t last_dim,
                                          const torch::Device& device) {
  absl::StatusOr<HostTensor> host = FromProto(proto, field);
  if (!host.ok()) return host.status();
  if (host->shape.size() != 3 || host->shape[2] != last_dim ||
      host->shape[0] < 1 || host->shape[1] < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " must have shape [batch, tokens, ", last_dim, "], got ",
        host->ShapeString()));
  }
  return ToTorch(*host, device);
}

struct GpuExecutor::Impl {
  Options options;
  torch::Device device{torch::kCPU};
  std::string device_name;  // device.str(), noting an auto choice without CUDA
  std::string device_id;    // Options::device_id, or the CUDA device's UUID

  DeviceCostConfig cost_config;  // the reference GPU (devices/cost_settings.h)
  std::map<std::string, std::string> settings;
  // The same for a bf16 session: products at the reference's bf16 rate.
  DeviceCostConfig bf16_cost_config;
  std::map<std::string, std::string> bf16_settings;
  // Times each task on the device (CUDA events and NVML; the CPU's wall).
  std::unique_ptr<DeviceMeter> meter;

  // Measured time and energy (`measured`: the task's span, the device
  // synchronised), and the cost of the kernels the task ran on the
  // reference GPU, from their work (devices/work_cost.h). `optimizer`: the
  // parameters an update stepped, for the fused baselines.
  void Cost(const std::string& task_type, const GpuSession& session,
            const std::vector<GpuKernel>& kernels, const DeviceMeter::Reading& measured,
            CostReport* cost, const std::vector<int64_t>& optimizer_numel = {}) {
    const bool bf16 = session.bf16;
    TaskWork work;
    AddKernels(kernels, &work);
    for (int64_t n : optimizer_numel) work.add_optimizer_numel(n);
    work.set_state_bytes(session.state_bytes);
    *cost = CostTaskWork(work, bf16 ? bf16_cost_config : cost_config, GpuBaseline::paper, nullptr,
                         task_type);
    cost->set_device(device_name);
    cost->set_measured_s(measured.s);
    cost->set_measured_j(measured.j);
    SetCounter(meter->board(), measured, cost);
    cost->set_measured_by(meter->measured_by());
    cost->set_device_name(meter->device_name());
    const auto& s = bf16 ? bf16_settings : settings;
    work.mutable_settings()->insert(s.begin(), s.end());
    *cost->mutable_work() = std::move(work);
  }
  void HostSync(const std::string& what) {
    if (options.on_host_sync) options.on_host_sync(what);
  }

  mutable absl::Mutex mu;
  JobTable<GpuSession> jobs ABSL_GUARDED_BY(mu){"has no parameters on this worker"};
  // Each job's resident training samples (LoadParametersHeader.samples).
  std::map<std::string, std::shared_ptr<const ResidentSamples>> samples ABSL_GUARDED_BY(mu);

  void Sync() {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  }
};

}  // namespace hpt

#endif  // HPT_WORKERS_GPU_EXECUTOR_IMPL_H_
