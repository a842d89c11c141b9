// HybridRunner: drives one job's LoRA phase over its segments on ReRAM and
// systolic workers (coordinator/training/hybrid_plan.h). A forward sends each
// segment, in order, the values it reads (the batch, or activations other
// segments returned); the last segment computes the loss. A backward walks
// the segments in reverse, sending each the gradients of its outputs and
// summing the gradients it returns for its inputs. Activations a pending
// backward needs stay on the worker that made them.
//
//   HybridRunner runner(job_id, plan, reram_workers, systolic_workers, opt);
//   RETURN_IF_ERROR(runner.Load(params, sink));
//   ASSIGN_OR_RETURN(double loss, runner.Forward(x, &y, step, true, sink));
//   RETURN_IF_ERROR(runner.Backward(step, sink));
//   RETURN_IF_ERROR(runner.Update(step, lr, sink));
//
// Not thread-safe.
#ifndef HPT_COORDINATOR_TRAINING_HYBRID_RUNNER_H_
#define HPT_COORDINATOR_TRAINING_HYBRID_RUNNER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "coordinator/dispatch/worker_client.h"
#include "coordinator/training/hybrid_plan.h"
#include "cost/finished_task.h"

namespace hpt {

class HybridRunner {
 public:
  // `reram` and `systolic` hold at least the workers the plan indexes.
  HybridRunner(std::string job_id, HybridPlan plan, std::vector<WorkerClient*> reram,
               std::vector<WorkerClient*> systolic, OptimizerConfig optimizer);

  // Loads every segment with its parameters (by name; all must be present)
  // and, restoring a checkpoint, their optimizer state ("<name>@exp_avg",
  // "@exp_avg_sq") after `optimizer_steps` updates; parameters under a
  // prefix of `steps_by_prefix` after that many instead (adapters added
  // later than the optimizer began).
  absl::Status Load(const std::map<std::string, HostTensor>& params, const TaskSink& sink,
                    int64_t optimizer_steps = 0,
                    const std::map<std::string, int64_t>& steps_by_prefix = {});
  // Runs the segments. `targets` non-null: returns the loss (the last
  // segment's MSE); `prediction` non-null: receives the model's output.
  absl::StatusOr<double> Forward(const HostTensor& inputs, const HostTensor* targets,
                                 int64_t step, bool train, const TaskSink& sink,
                                 HostTensor* prediction = nullptr);
  // `input_grad` non-null: receives the gradient of the loss w.r.t. inputs.
  absl::Status Backward(int64_t step, const TaskSink& sink,
                        HostTensor* input_grad = nullptr);
  absl::Status Update(int64_t step, double learning_rate, const TaskSink& sink);
  // The parameters held by the segments (and the optimizer's state): those
  // named, or every one.
  absl::StatusOr<std::map<std::string, HostTensor>> Parameters(
      bool optimizer_state = false, const std::vector<std::string>& names = {});
  void Release();

  const HybridPlan& plan() const { return plan_; }
  // Sum over the last backward's segments of the squared gradient norms.
  double last_grad_norm_sq() const { return grad_norm_sq_; }
  std::vector<double> last_segment_grad_norms() const { return segment_grad_norms_; }

 private:
  WorkerClient* WorkerOf(const PlannedSegment& segment) const;
  std::string Resource(const PlannedSegment& segment, WorkerClient* worker) const;
  std::vector<WorkerClient*> Workers() const;

  std::string job_id_;
  HybridPlan plan_;
  // Index of the last segment that reads each value: the forward drops a
  // value once it is sent there.
  std::map<std::string, size_t> last_reader_;
  std::vector<WorkerClient*> reram_, systolic_;
  OptimizerConfig optimizer_;
  double grad_norm_sq_ = 0;
  std::vector<double> segment_grad_norms_;
  int64_t samples_ = 1;  // of the last training forward
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_HYBRID_RUNNER_H_
