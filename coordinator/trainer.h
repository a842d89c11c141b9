// Trainer: runs one job's training schedule against its workers. Owns the
// epochs and batches, the StepLR learning-rate schedule, the split of each
// batch across data-parallel GPU workers, and the order of tasks: all
// forwards, then all backwards (gradients averaged by the workers through
// Gloo), then all updates. With the output head on a ReRAM or systolic
// worker, a step is: encoder forward (GPU) -> head forward and loss (head
// worker) -> head backward -> encoder backward with the head's input
// gradient -> both updates. Adds up every task's cost report per worker.
// Reports progress through a callback.
//
// Not thread-safe: one Run at a time. The clock is injectable.
#ifndef HPT_COORDINATOR_TRAINER_H_
#define HPT_COORDINATOR_TRAINER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "absl/time/clock.h"
#include "coordinator/worker_client.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

class RendezvousStore;

struct TrainerUpdate {
  JobProgress progress;
  std::vector<double> epoch_losses;
  CostReport cost;                       // all tasks
  std::vector<DeviceCost> device_costs;  // per worker
};

class Trainer {
 public:
  struct Options {
    std::function<absl::Time()> now = [] { return absl::Now(); };
    std::function<void(const TrainerUpdate&)> on_progress;
    std::function<bool()> cancelled = [] { return false; };
    // Needed when the job has more than one GPU worker.
    RendezvousStore* rendezvous = nullptr;
    double join_timeout_s = 60;
    // The worker running the output head when placement.head_device is not
    // "gpu"; the GPU worker then runs the encoder segment.
    WorkerClient* head_worker = nullptr;
  };

  // `spec` is normalised; `workers` has spec.placement.gpu_workers entries.
  Trainer(std::string job_id, JobSpec spec, const WindowDataset* data,
          std::vector<WorkerClient*> workers, Options options);

  // Trains to the end. CANCELLED when cancelled; the worker's error, or
  // INVALID_ARGUMENT for a non-finite loss, when a step fails.
  absl::Status Run();

  // Learning rate of 0-based `epoch` under StepLR.
  static double LearningRate(const TrainingSpec& training, int epoch);
  // Sizes of the data-parallel shards of a batch of `batch` samples.
  static std::vector<int64_t> ShardSizes(int64_t batch, int workers);

 private:
  absl::Status LoadModel();
  absl::Status TrainStep(const std::vector<int64_t>& indices, int64_t step,
                         double learning_rate, double* loss);
  absl::StatusOr<double> Evaluate();
  void AddCost(WorkerClient* worker, const std::string& kind,
               const CostReport& cost);
  absl::Status LoadHead();
  absl::StatusOr<double> HeadStep(const HostTensor& x, const HostTensor& y,
                                  int64_t step, double learning_rate);
  absl::StatusOr<double> EvaluateBatch(const HostTensor& x, const HostTensor& y);
  void Report();

  const std::string job_id_;
  const JobSpec spec_;
  const WindowDataset* data_;
  std::vector<WorkerClient*> workers_;
  Options options_;
  TrainerUpdate state_;
  std::map<WorkerClient*, size_t> cost_index_;  // into state_.device_costs
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINER_H_
