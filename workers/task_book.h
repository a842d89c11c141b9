// The bookkeeping both executors keep (gpu_executor.h, device_executor.h):
//
//   JobTable<Job>   each job's state on the worker, by job id;
//   TaskBook<P>     per job, what makes tasks idempotent: training forwards
//                   waiting for their backward (P: whatever the executor
//                   keeps for it), backward answers kept for a retry, and
//                   the last step whose update was applied.
//
// Keys are (step, micro-batch, segment) within a job (TaskKey). A forward
// replaces a pending one with the same key; a repeated backward gets the
// cached answer; an update of a step already applied does nothing, and
// then the answers and the forwards of finished steps go.
//
// Neither is thread-safe: the executor's mutex guards them.
#ifndef HPT_WORKERS_TASK_BOOK_H_
#define HPT_WORKERS_TASK_BOOK_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/worker_service.pb.h"

namespace hpt {

// An update's rate, as both executors check it before they look the job
// up: INVALID_ARGUMENT unless positive and finite.
inline absl::Status CheckLearningRate(const ApplyUpdateRequest& request) {
  if (request.learning_rate() > 0 && std::isfinite(request.learning_rate())) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "ApplyUpdateRequest.learning_rate must be positive, got ", request.learning_rate()));
}

// A parameter's Adam moments in snapshots and loads ("<name>@exp_avg",
// "<name>@exp_avg_sq"; proto/worker_service.proto).
inline constexpr char kExpAvgSuffix[] = "@exp_avg";
inline constexpr char kExpAvgSqSuffix[] = "@exp_avg_sq";

// The updates a load says parameter `name`'s optimizer state has had: the
// longest optimizer_steps_by_prefix entry that matches it (an adapter
// added after the optimizer began), else optimizer_steps.
inline int64_t OptimizerStepsOf(const LoadParametersHeader& header, const std::string& name) {
  int64_t steps = header.optimizer_steps();
  size_t longest = 0;
  for (const auto& [prefix, n] : header.optimizer_steps_by_prefix()) {
    if (prefix.size() > longest && absl::StartsWith(name, prefix)) {
      longest = prefix.size();
      steps = n;
    }
  }
  return steps;
}

// "job 'J' step S micro-batch M segment 'G'", for errors.
inline std::string TaskKeyString(const TaskKey& key) {
  return absl::StrCat("job '", key.job_id(), "' step ", key.step(), " micro-batch ",
                      key.micro_batch(), " segment '", key.segment(), "'");
}

template <typename Job>
class JobTable {
 public:
  // `missing` ends the error for an unknown job, e.g. "has no parameters
  // on this worker".
  explicit JobTable(std::string missing) : missing_(std::move(missing)) {}

  // FAILED_PRECONDITION for a job not loaded here (the coordinator reads
  // "call LoadParameters first" as a worker that lost the job).
  absl::StatusOr<Job*> Find(const std::string& job_id) const {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job '", job_id, "' ", missing_, "; call LoadParameters first"));
    }
    return it->second.get();
  }
  // The job's entry, null when there is none.
  Job* Get(const std::string& job_id) const {
    auto it = jobs_.find(job_id);
    return it == jobs_.end() ? nullptr : it->second.get();
  }
  // The job's entry, made empty if there is none.
  Job& Emplace(const std::string& job_id) {
    std::unique_ptr<Job>& job = jobs_[job_id];
    if (!job) job = std::make_unique<Job>();
    return *job;
  }
  void Put(const std::string& job_id, std::unique_ptr<Job> job) { jobs_[job_id] = std::move(job); }
  void Erase(const std::string& job_id) { jobs_.erase(job_id); }
  std::vector<std::string> Ids() const {
    std::vector<std::string> ids;
    for (const auto& [id, job] : jobs_) ids.push_back(id);
    return ids;
  }

 private:
  const std::string missing_;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
};

template <typename Pending>
class TaskBook {
 public:
  // A training forward's state for its backward.
  void AddPending(const TaskKey& key, Pending pending) {
    pending_[KeyOf(key)] = std::move(pending);
  }
  // The answer of a backward already run for `key` (a retry), or null.
  const BackwardResponse* Answered(const TaskKey& key) const {
    auto it = backward_done_.find(KeyOf(key));
    return it == backward_done_.end() ? nullptr : &it->second;
  }
  // The pending forward of `key`; FAILED_PRECONDITION naming the key.
  absl::StatusOr<Pending*> FindPending(const TaskKey& key) {
    auto it = pending_.find(KeyOf(key));
    if (it == pending_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("no pending forward for ", TaskKeyString(key),
                       "; a backward needs a train-mode forward with the same key"));
    }
    return &it->second;
  }
  // Drops the pending forward of `key` (its backward has consumed it).
  void Forget(const TaskKey& key) { pending_.erase(KeyOf(key)); }
  // The answer of the backward of `key`, kept for a retry.
  void Answer(const TaskKey& key, BackwardResponse response) {
    backward_done_[KeyOf(key)] = std::move(response);
  }
  // Both, after a backward.
  void FinishBackward(const TaskKey& key, BackwardResponse response) {
    Forget(key);
    Answer(key, std::move(response));
  }
  // Whether the update of `step` was applied already (a retry).
  bool Applied(int64_t step) const { return step <= last_applied_step_; }
  // The update of `step` applied: answers go, and so do forwards of
  // finished steps (they will never see their backward).
  void Apply(int64_t step) {
    last_applied_step_ = step;
    backward_done_.clear();
    for (auto it = pending_.begin(); it != pending_.end();) {
      it = std::get<0>(it->first) <= step ? pending_.erase(it) : std::next(it);
    }
  }

 private:
  using Key = std::tuple<int64_t, int32_t, std::string>;  // step, micro-batch, segment
  static Key KeyOf(const TaskKey& key) { return {key.step(), key.micro_batch(), key.segment()}; }

  std::map<Key, Pending> pending_;
  std::map<Key, BackwardResponse> backward_done_;
  int64_t last_applied_step_ = -1;
};

}  // namespace hpt

#endif  // HPT_WORKERS_TASK_BOOK_H_
