// A GPU worker's state for one job (gpu_executor.h): the LibTorch model and
// its optimizer, the data-parallel group, and the pending forwards. Built
// from a LoadParametersHeader and its tensors (a fresh model, a checkpoint,
// a LoRA copy), joined to a c10d group, and snapshotted back to tensors.
//
// Internal to the GPU executor: this header includes LibTorch, so only
// gpu_executor.cc and gpu_session.cc include it (each such translation
// unit costs about 14 s to compile).
#ifndef HPT_WORKERS_GPU_SESSION_H_
#define HPT_WORKERS_GPU_SESSION_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "models/st_transformer.h"
#include "proto/worker_service.pb.h"
#include "workers/gpu/gradient_buckets.h"
#include "workers/gpu/kernel_recorder.h"
#include "workers/task_book.h"

namespace hpt {

class StepGraphs;  // step_graph.h

// What a training forward keeps for its backward.
struct GpuPending {
  torch::Tensor loss;    // full model: backward starts here
  torch::Tensor output;  // encoder segment: backward takes its gradient
  int64_t batch = 0;
};

struct GpuSession {
  ModelConfig config;
  SpatioTemporalTransformer model{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  OptimizerType optimizer_type = ADAM;
  TaskBook<GpuPending> tasks;
  KernelMemo kernels;  // the job's recorded kernels by task shape
  bool encoder_only = false;
  int64_t last_batch = 0, last_tokens = 0;  // of the last train forward
  // Attention projection weights at the job's first load: the reference of
  // an auto LoRA rank ("the change since training began").
  std::map<std::string, torch::Tensor> initial;
  // The data-parallel group: NCCL when the model is on CUDA, Gloo on CPU.
  c10::intrusive_ptr<c10d::Backend> group;
  uint64_t seed = 0;  // init_seed: with the step, seeds each step's dropout
  bool bf16 = false;  // forwards under bf16 autocast (header.precision)
  // Bytes the model keeps between steps: its parameters, and for those it
  // trains a gradient and Adam's two moments (TaskWork.state_bytes).
  int64_t state_bytes = 0;
  // Runs (gpu_run.h): each task shape's cost on the reference GPU, with
  // how many recordings of the shape it was costed from; the losses of the
  // steps runs applied, for a retried run's answer (the last run's only).
  std::map<std::string, std::pair<int, CostReport>> shape_costs;
  std::map<int64_t, double> run_losses;
  int64_t last_run_first_step = -1;
  std::string last_run_trial;
  TrainRunResponse last_run;
  // Runs under `launch: graph`: each step shape's captured step (made at
  // the first such run).
  std::shared_ptr<StepGraphs> graphs;
  // A run's all-reduce, bucketed to overlap its backward (made at the
  // first run in a group). Last, so it goes first: its hooks sit on the
  // model's parameters.
  std::unique_ptr<GradientBuckets> buckets;
};

// A host tensor on `device` (a copy).
torch::Tensor ToTorch(const HostTensor& t, const torch::Device& device);
// "[2, 3]".
std::string ShapeString(c10::IntArrayRef sizes);

// Builds the job's session: the model from header.model seeded with
// header.init_seed, `parameters` copied in (the base model's all or none,
// LoRA adapters, optimizer state after header.optimizer_steps updates),
// LoRA applied when header.lora is enabled, and the optimizer. `reference`
// (may be null): an earlier session of the job (or of its lora
// reference_job) whose initial projection weights this one keeps. Fills
// the response's counts and LoRA ranks.
absl::StatusOr<std::unique_ptr<GpuSession>> BuildGpuSession(
    const LoadParametersHeader& header, std::map<std::string, HostTensor> parameters,
    const GpuSession* reference, const torch::Device& device, LoadParametersResponse* response);

// The keys a task's kernels are remembered by (KernelMemo): what its ops
// depend on. Task calls and runs take them from here, so a shape recorded
// by one serves the other.
std::string ForwardShapeKey(const std::vector<int64_t>& input_shape, bool train, bool targets,
                            bool outputs);
std::string BackwardShapeKey(int64_t batch, bool encoder, bool allreduce);
std::string UpdateShapeKey(const std::vector<int64_t>& stepped);

// The size of each parameter the next optimizer step updates (those with a
// gradient), in the optimizer's order.
std::vector<int64_t> SteppedNumels(GpuSession& session);

// The optimizer's rate for its next step.
void SetLearningRate(GpuSession& session, double rate);

// Averages the gradients of `params` over the session's group: one flat
// buffer, one all-reduce after the backward (a parameter without a
// gradient gives zeros). Task calls' backward; a run reduces in buckets
// (gradient_buckets.h).
void AllReduceGradients(GpuSession& session, const std::vector<torch::Tensor>& params);

// Joins the group `request` names: NCCL on CUDA, Gloo (bound to
// `gloo_host`) on CPU; then every rank takes rank 0's parameters.
void JoinGpuGroup(GpuSession& session, const JoinGroupRequest& request,
                  const torch::Device& device, const std::string& gloo_host);

// The session's parameters (those in `names`, or all), in the model's
// order, cut into chunks; with `optimizer_state`, Adam's moments too.
std::vector<TensorChunk> SnapshotGpuSession(GpuSession& session, int64_t max_chunk_bytes,
                                            const std::vector<std::string>& names,
                                            bool optimizer_state);

}  // namespace hpt

#endif  // HPT_WORKERS_GPU_SESSION_H_
