// DeviceExecutor: a simulated-device worker (kind "reram" or "systolic").
// Holds each job's segment (a chain of LINEAR and RELU ops) with its
// parameters resident in the device, and runs forward / backward / update
// tasks with the device's numerics, answering each with a cost report:
// simulated latency and energy, and counters (MACs, cycles, SRAM and DRAM
// traffic for the systolic array; crossbar activations, ADC conversions,
// cell writes and worst-cell wear for ReRAM).
//
// ReRAM: LINEAR weights are programmed into crossbars at load (every cell
// write counted); the forward is a crossbar read x W^T, the backward a
// transposed read g W. Frozen weights are never rewritten; a trainable one
// (a what-if) is reprogrammed by every update, paying the writes, and its
// weight gradient is computed by the node's digital unit, costed as a
// systolic array of the same clock. Bias, ReLU, loss and optimizer work is
// element-wise digital work.
//
// Systolic: every product (forward x W^T, input gradient g W, weight
// gradient g^T x) runs on the array with its numerics (fp32, or bf16
// operands), costed with SCALE-Sim's model; element-wise work runs on a
// vector unit as wide as the array.
//
// Element-wise work: one operation per lane per cycle, lanes = array
// columns (ReRAM: crossbar columns), at the device clock; energy per
// operation 0.9 pJ, a 32-bit float add (Horowitz, ISSCC 2014, 45 nm).
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
    std::string kind = "systolic";  // "systolic" or "reram"
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
  absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& request) override;
  absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, int64_t max_chunk_bytes,
      const std::vector<std::string>& names = {}) override;
  absl::Status Release(const std::string& job_id) override;
  std::vector<std::string> Jobs() const override;

 private:
  struct Impl;
  explicit DeviceExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_DEVICE_EXECUTOR_H_
