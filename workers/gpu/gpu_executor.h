// GpuExecutor: the GPU worker's device. Holds each job's model and optimizer
// between tasks and runs forward / backward / update with LibTorch (CUDA
// when the machine has it, else CPU). Plain C++: the gRPC service in
// worker_service.h is a thin adapter over it, and tests drive it directly.
//
// Segments: with gpu_segment "encoder" the forward returns the encoder
// output (the head runs on another worker) and the backward takes the
// gradient of that output.
//
// Data parallelism: after JoinGroup, Backward averages gradients across the
// group's ranks with c10d's Gloo process group; each rank weights its loss
// by its share of the global batch, so the average equals the gradient of
// the combined batch. One forward/backward per rank per step.
//
// Costs: each task reports its measured wall time and, beside it, the
// time and energy of the same work on the reference GPU by the roofline
// model (fp32), from the model's analytic FLOPs and traffic.
//
// Runs: with the job's samples resident (LoadParametersHeader.samples),
// TrainRun trains a run of whole steps on the worker (workers/gpu/gpu_run.h).
//
// Idempotency: Forward replaces a pending forward with the same key;
// Backward answers a repeated key from its cached response; ApplyUpdate of a
// step already applied does nothing and says so (applied = false).
//
// Thread-safe; tasks run one at a time, as on a real device.
// LibTorch stays in the .cc file.
#ifndef HPT_WORKERS_GPU_EXECUTOR_H_
#define HPT_WORKERS_GPU_EXECUTOR_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "proto/worker_service.pb.h"
#include "workers/task_executor.h"

namespace hpt {

class GpuExecutor : public TaskExecutor {
 public:
  // The seed of a training forward's dropout masks: a function of the
  // job's init_seed, the task and the data-parallel rank only, never of
  // what ran before on the worker, so a step replayed after a failover or
  // a restart draws the same masks.
  static uint64_t DropoutSeed(uint64_t init_seed, int64_t step, int32_t micro_batch, int rank) {
    return init_seed * 1000003ULL + uint64_t(step) * 8191ULL + uint64_t(micro_batch) * 131ULL +
           uint64_t(rank) * 7ULL;
  }

  struct Options {
    // "auto" (cuda:0 when available, else cpu), "cpu", or "cuda:N".
    std::string device = "auto";
    // Address Gloo binds for collectives on CPU; the worker's host (NCCL
    // finds its own interfaces).
    std::string gloo_host = "127.0.0.1";
    // LibTorch intra-op threads; 0 keeps LibTorch's default.
    int intra_op_threads = 0;
    // Reference GPU of the roofline cost reported beside the measured time
    // (devices/gpu/roofline.h): a preset name or a profile's text.
    std::string reference_gpu = "v100";
    // The physical device's identity, which the worker registers with:
    // empty takes a CUDA device's UUID (a CPU device has none: its own).
    // Workers given the same id are treated as sharing one GPU.
    std::string device_id;
    // Called each time a run (TrainRun) makes the host wait for the device,
    // with what it waited for: the count a run's synchronisations are
    // held to (one per run). Unset: not called.
    std::function<void(const std::string& what)> on_host_sync;
    // A run's all-reduce buckets (workers/gpu/gradient_buckets.h); 0: DDP's
    // 25 MiB, the first 1 MiB.
    int64_t allreduce_bucket_bytes = 0;
    // `launch: graph` without CUDA runs each graph step's body uncaptured
    // (workers/gpu/step_graph.h), the CPU twin of the CUDA path, for tests;
    // false: such steps go eager and the run says why.
    bool uncaptured_graphs = false;
  };

  static absl::StatusOr<std::unique_ptr<GpuExecutor>> Create(
      const Options& options);
  ~GpuExecutor() override;

  std::string device_name() const override;
  std::string device_id() const override;

  // Builds the job's model from header.model seeded with header.init_seed,
  // then overwrites parameters given in `parameters` (all or none).
  absl::StatusOr<LoadParametersResponse> Load(
      const LoadParametersHeader& header,
      std::map<std::string, HostTensor> parameters) override;
  // Joins the job's data-parallel group through the c10d store named in
  // `request`: NCCL when this worker's device is CUDA, Gloo on CPU.
  absl::Status JoinGroup(const JoinGroupRequest& request) override;
  // The c10d backend of the job's group ("nccl" or "gloo"), or "" when the
  // job has none.
  std::string CollectiveBackend(const std::string& job_id) const;
  absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& request) override;
  absl::StatusOr<BackwardResponse> Backward(const BackwardRequest& request) override;
  absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& request) override;
  // A run of whole steps on the job's resident samples (a load with
  // LoadParametersHeader.samples): forward, backward with the group's
  // all-reduce, and update for each, with one wait for the device at the
  // run's end, where its losses are read and its span measured. A step's
  // kernels are recorded and costed once per task shape. A retry of the
  // run answered last (same job and first step) gets the same answer; a
  // step already applied is not applied again, its loss kept from before.
  // The model segment only (not an encoder).
  absl::StatusOr<TrainRunResponse> TrainRun(const TrainRunRequest& request) override;
  // The job's parameters, in the model's order, cut into chunks.
  absl::StatusOr<std::vector<TensorChunk>> Snapshot(
      const std::string& job_id, int64_t max_chunk_bytes,
      const std::vector<std::string>& names = {},
      bool optimizer_state = false) override;
  absl::Status Release(const std::string& job_id) override;
  std::vector<std::string> Jobs() const override;
  // Times a model's full step under each GPU baseline on this device
  // (workers/gpu/baseline_probe.h); no job's state is touched.
  absl::StatusOr<ProbeBaselinesResponse> ProbeBaselines(
      const ProbeBaselinesRequest& request) override;

 private:
  struct Impl;
  explicit GpuExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_GPU_EXECUTOR_H_
