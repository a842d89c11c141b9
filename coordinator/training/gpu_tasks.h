// GpuTasks: the tasks of one training step on a job's GPU workers, as the
// trainer dispatches them (trainer.h owns which step runs when):
//
//   data-parallel  the batch split over every GPU worker: forwards,
//                  backwards (gradients averaged by the workers), updates;
//   with a head    the encoder on the first GPU worker, the output head
//                  and loss on a ReRAM or systolic worker (hpt.mode full);
//   trial          the LoRA copy ("<job>/trial") beside the full model;
//   predict        an inference forward for evaluation.
//
// Every task's cost goes to the sink (cost_ledger.h) with the bytes it moved.
//
//   GpuTasks tasks(job_id, workers, head_worker, head_kind, &ledger.sink());
//   ASSIGN_OR_RETURN(double loss, tasks.DataParallelStep(data, indices, step, lr));
//
// Not thread-safe: one step at a time.
#ifndef HPT_COORDINATOR_TRAINING_GPU_TASKS_H_
#define HPT_COORDINATOR_TRAINING_GPU_TASKS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "common/worker_tasks.h"
#include "coordinator/dispatch/worker_client.h"
#include "coordinator/training/hybrid_runner.h"
#include "data/window_dataset.h"

namespace hpt {

class GpuTasks {
 public:
  // `workers`: the GPU workers (at least one); `head_worker` (may be null)
  // runs the output head on a device of `head_kind`; runs launch their
  // steps by `launch` (training.launch). `sink` must outlive this.
  GpuTasks(std::string job_id, std::vector<WorkerClient*> workers, WorkerClient* head_worker,
           DeviceKind::Name head_kind, Launch::Mode launch, const TaskSink* sink);

  // Sizes of the data-parallel shards of a batch of `batch` samples.
  static std::vector<int64_t> ShardSizes(int64_t batch, int workers);

  // The training samples train_starts[indices] over every GPU worker.
  // Returns the batch's mean loss; a non-finite one is returned before the
  // backward, for the caller to stop on.
  absl::StatusOr<double> DataParallelStep(const WindowDataset& data,
                                          const std::vector<int64_t>& indices, int64_t step,
                                          double learning_rate);
  // The job's training samples for a GPU worker's load: the header's
  // LoadParametersHeader.samples, and the normalised series' chunks to send
  // with it. A worker keeps them until the job is released.
  static SampleSource SamplesOf(const WindowDataset& data);
  static std::vector<TensorChunk> SampleChunks(const WindowDataset& data);

  // A data-parallel run of whole steps on the GPU workers' resident
  // samples: step first_step + j trains the samples
  // train_starts[batches[j]] at rates[j], each batch split over the
  // workers as DataParallelStep splits it. Every batch has one size.
  // With `trial_rate` > 0 the trial's LoRA copy trains beside the model
  // on the first worker, each step on the whole batch at that rate, as
  // TrialStep trains it.
  struct Run {
    int64_t first_step = 0;
    std::vector<double> losses;               // each step's mean loss
    std::vector<double> trial_losses;         // with a trial: its losses
    std::vector<TrainRunResponse> responses;  // each worker's
    std::vector<int64_t> shards;              // each worker's samples a step
  };
  absl::StatusOr<Run> DataParallelRun(const WindowDataset& data, int64_t first_step,
                                      const std::vector<std::vector<int64_t>>& batches,
                                      const std::vector<double>& rates, double trial_rate = 0);
  // One step of `run` on every worker, to the sink: forward, backward and
  // update as task calls record them (every step of a run has one shape),
  // each with its share of the run's measured span.
  void RecordRunStep(const Run& run) const;
  // The same for the trial's step, on the first worker.
  void RecordRunTrialStep(const Run& run) const;

  // The encoder on the first GPU worker, the head on the head worker.
  absl::StatusOr<double> HeadStep(const HostTensor& x, const HostTensor& y, int64_t step,
                                  double learning_rate);
  // The trial's LoRA copy on the first GPU worker.
  absl::StatusOr<double> TrialStep(const HostTensor& x, const HostTensor& y, int64_t step,
                                   double learning_rate);
  // The model's prediction for `x` (the encoder, then the head if any).
  absl::StatusOr<HostTensor> Predict(const HostTensor& x);

  const std::string& trial_job() const { return trial_job_; }

 private:
  void Record(WorkerClient* worker, DeviceKind::Name kind, const std::string& type,
              const CostReport& cost, int64_t bytes_in = 0, int64_t bytes_out = 0) const;
  static TaskKey Key(const std::string& job, int64_t step, const std::string& segment);
  // A forward of `segment` at `step` (train: targets kept for the loss).
  static ForwardRequest MakeForward(const std::string& job, int64_t step,
                                    const std::string& segment, bool train);
  absl::StatusOr<ApplyUpdateResponse> Update(WorkerClient* worker, const std::string& job,
                                             int64_t step, double learning_rate) const;

  const std::string job_id_, trial_job_;
  const std::vector<WorkerClient*> workers_;
  WorkerClient* const head_;
  const DeviceKind::Name head_kind_;
  const Launch::Mode launch_;
  const TaskSink* sink_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_GPU_TASKS_H_
