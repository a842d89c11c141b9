// DeviceExecutor: a simulated-device worker (kind reram or systolic).
// Holds each job's segments (workers/sim/segment_graph.h: linear layers, LoRA
// adapters, attention products, LayerNorm, residual adds, ReLU, dropout)
// with their parameters resident in the device, and runs forward /
// backward / update tasks with the device's numerics, answering each with
// a cost report: simulated latency and energy, and counters (MACs, cycles,
// SRAM and DRAM traffic for the systolic array; crossbar activations, ADC
// conversions, cell writes and worst-cell wear for ReRAM). A job may hold
// several segments on one worker; tasks name theirs in TaskKey.segment, and
// ApplyUpdate steps every trainable parameter of the job (Adam/AdamW).
//
// Thread-safe; one task at a time. Idempotency as GpuExecutor's.
#ifndef HPT_WORKERS_DEVICE_EXECUTOR_H_
#define HPT_WORKERS_DEVICE_EXECUTOR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "devices/reram/reram_layer.h"
#include "devices/systolic/systolic_array.h"
#include "workers/task_executor.h"

namespace hpt {

class DeviceExecutor : public TaskExecutor {
 public:
  struct Options {
    DeviceKind::Name kind = DeviceKind::systolic;  // or reram
    SystolicConfig systolic;
    ReramConfig reram;
    // Energy of one element-wise operation (see above).
    double elementwise_energy_j = 0.9e-12;
  };

  static absl::StatusOr<std::unique_ptr<DeviceExecutor>> Create(
      const Options& options);
  ~DeviceExecutor() override;

  std::string device_name() const override;
  absl::StatusOr<LoadParametersResponse> Load(
      const LoadParametersHeader& header,
      std::map<std::string, HostTensor> parameters) override;
  absl::Status JoinGroup(const JoinGroupRequest& request) override;
  absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& request) override;
  absl::StatusOr<BackwardResponse> Backward(const BackwardRequest& request) override;
  absl::StatusOr<ForwardResponse> TakeForward(ForwardRequest&& request) override;
  absl::StatusOr<BackwardResponse> TakeBackward(BackwardRequest&& request) override;
  absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& request) override;
  absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, int64_t max_chunk_bytes,
      const std::vector<std::string>& names = {},
      bool optimizer_state = false) override;
  absl::Status Release(const std::string& job_id) override;
  std::vector<std::string> Jobs() const override;

 private:
  struct Impl;
  explicit DeviceExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_DEVICE_EXECUTOR_H_
