// StepHistory: a job's loss at every step, its epochs and its latest test
// predictions, kept for the plots of hptctl report --format=html and the
// coordinator's pages. One object is shared by the trainer that appends to
// it and the registry that reads it, so a progress update passes a pointer,
// not 10^5 losses. Thread-safe.
//
//   auto history = std::make_shared<StepHistory>();
//   history->AddStep(step, loss);
//   JobHistory view = history->View(1000);  // downsampled for a plot
#ifndef HPT_COORDINATOR_TRAINING_STEP_HISTORY_H_
#define HPT_COORDINATOR_TRAINING_STEP_HISTORY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "proto/job_service.pb.h"

namespace hpt {

class StepHistory {
 public:
  StepHistory() = default;
  // The history a checkpoint holds, cut to its first `steps` steps (the
  // steps after are replayed and appended again).
  static std::shared_ptr<StepHistory> FromProto(const LossHistory& proto, int64_t steps);

  // Step `step` (0-based) had `loss`. A step at or before one already
  // recorded replaces it and drops those after (a replay).
  void AddStep(int64_t step, double loss);
  void AddEpoch(const EpochPoint& epoch);
  void SetPredictions(TestPredictions predictions);

  int64_t steps() const;
  // The newest epoch's point; none before the first epoch ends.
  std::optional<EpochPoint> LastEpoch() const;
  LossHistory ToProto() const;
  // At most `max_points` points (0: 1000) of ceil(steps / max_points) steps
  // each: mean, least and largest loss.
  JobHistory View(int max_points) const;

 private:
  mutable absl::Mutex mu_;
  std::vector<float> losses_ ABSL_GUARDED_BY(mu_);
  std::vector<EpochPoint> epochs_ ABSL_GUARDED_BY(mu_);
  TestPredictions predictions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_STEP_HISTORY_H_
