// A GPU worker's run of whole training steps (TrainRun, gpu_executor.h):
// the job's samples resident on the device, and the loop that trains a
// run of steps on them with no host wait inside it.
//
// A run's steps are the steps the coordinator would otherwise send as
// forward, backward and update calls, with the same numerics: the same
// samples (gathered on the device from the normalised series, the values
// WindowDataset::Gather gives), the same dropout seeds (DropoutSeed of the
// job, step and rank), each rank's loss weighted by its share of the
// global batch, the gradients averaged over the group in one flat buffer,
// and the optimizer stepped at the step's rate. Each step's loss stays on
// the device; the caller reads them all once, after the run.
//
// Internal to the GPU executor: this header includes LibTorch.
#ifndef HPT_WORKERS_GPU_RUN_H_
#define HPT_WORKERS_GPU_RUN_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "proto/worker_service.pb.h"
#include "workers/gpu/device_meter.h"
#include "workers/gpu/gpu_session.h"

namespace hpt {

// A job's training samples on the device.
struct ResidentSamples {
  SampleSource source;
  torch::Tensor series;  // [rows, columns], float, on the device
  // Sample ids are below this: every start row whose target row is in the
  // series, times the groups.
  int64_t num_ids() const;
};

// `series` [rows, columns] on `device`, checked against `source`.
absl::StatusOr<ResidentSamples> MakeResidentSamples(const SampleSource& source,
                                                    const HostTensor& series,
                                                    const torch::Device& device);

// Inputs [n, tokens, input_steps] and targets [n, tokens, 1] of the
// samples `ids` (int64, on the series' device), gathered on the device.
void GatherSamples(const ResidentSamples& samples, const torch::Tensor& ids, torch::Tensor* x,
                   torch::Tensor* y);

// INVALID_ARGUMENT naming the field when `request` is not a run the
// samples can train: no steps, a step with no samples or a global batch
// below them, a rate that is not positive, a sample id out of range.
// A trial's steps are checked the same way, one to each step.
absl::Status CheckRun(const TrainRunRequest& request, const ResidentSamples& samples);

// The task shapes of a run's steps, the keys its kernels are remembered
// by (KernelMemo): those of the forward, backward and update calls.
struct RunShapes {
  std::string forward, backward, update;
  std::vector<int64_t> stepped;  // numel of each parameter the update stepped
};

// Where a run trains and how its tasks are costed: the device, its meter
// (started and stopped once a run), the hook told of the run's one wait,
// and the cost of a task's recorded kernels on the reference GPU.
struct RunDevice {
  RunDevice(torch::Device device, DeviceMeter* meter) : device(device), meter(meter) {}
  torch::Device device;
  DeviceMeter* meter;
  // The all-reduce's buckets (GradientBuckets): their size, the first's.
  int64_t bucket_bytes = GradientBuckets::kBucketBytes;
  int64_t first_bucket_bytes = GradientBuckets::kFirstBucketBytes;
  std::function<void(const std::string& what)> on_wait;
  // How steps launch (the request's), and whether graph steps run their
  // body uncaptured (StepGraphs' CPU twin) rather than as CUDA graphs.
  Launch::Mode launch = Launch::eager;
  bool uncaptured_graphs = false;
  std::function<CostReport(const std::string& task_type, const GpuSession& session,
                           const std::vector<GpuKernel>& kernels,
                           const std::vector<int64_t>& optimizer_numel)>
      cost;
};

// What a run trained: the steps it applied (those not applied before), and
// their losses, one device tensor each; the same for its trial.
struct RunResult {
  RunShapes shapes, trial_shapes;
  std::vector<int64_t> steps, trial_steps;
  std::vector<torch::Tensor> losses, trial_losses;
  // How its steps launched: graph where any replayed a captured step;
  // why not, where graph was asked for.
  Launch::Mode launch = Launch::eager;
  std::string launch_note;
};

// Trains `request`'s steps on `session` that it has not applied yet
// (TaskBook::Applied), and after each the trial's step on `trial` (may be
// null: no trial), recording each task shape's kernels in the session's
// memo as the task calls do. Throws what LibTorch throws.
RunResult TrainRunSteps(GpuSession& session, GpuSession* trial, const ResidentSamples& samples,
                        const TrainRunRequest& request, const RunDevice& run_device);

// FAILED_PRECONDITION where a step of `request` was applied to `session`
// (job `job`) by task calls, whose losses a run's answer cannot give.
absl::Status CheckNotTaskApplied(const GpuSession& session, const std::string& job,
                                 const TrainRunRequest& request);

// A checked run's answer: its steps trained (TrainRunSteps) between the
// meter's start and stop, every loss read in one copy at the run's one
// wait, kept for a retry, and each task shape's cost (computed once a
// shape) with a step's share of the measured span. Remembers the answer
// as the session's last run. Throws what LibTorch throws.
TrainRunResponse AnswerRun(GpuSession& session, GpuSession* trial, const ResidentSamples& samples,
                           const TrainRunRequest& request, const RunDevice& run_device);

}  // namespace hpt

#endif  // HPT_WORKERS_GPU_RUN_H_
