// What a trainer reports while it runs (TrainerUpdate) and where it is in
// its schedule (TrainerCursor): the two halves of its state that a
// checkpoint keeps beside the cost ledger's (checkpoint_codec.h).
#ifndef HPT_COORDINATOR_TRAINING_TRAINING_STATE_H_
#define HPT_COORDINATOR_TRAINING_TRAINING_STATE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "coordinator/training/step_history.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

namespace hpt {

// Progress, costs and the HpT status, as the job shows them.
struct TrainerUpdate {
  JobProgress progress;
  std::vector<double> epoch_losses;
  CostReport cost;                       // all tasks
  std::vector<DeviceCost> device_costs;  // per worker
  QualityMetrics test_metrics;
  HptStatus hpt;
  // What the devices did (proto/work.proto), for whatif and trace.
  std::shared_ptr<const WorkRecord> work_record;
  // Loss per step and epoch, test predictions: shared, appended in place.
  std::shared_ptr<StepHistory> history = std::make_shared<StepHistory>();
};

// The trainer's position: in the data, in its optimizers, in the method.
struct TrainerCursor {
  int64_t steps_per_epoch = 0;
  double epoch_loss_sum = 0;  // of the epoch so far
  int64_t samples = 0;        // trained on, all epochs
  // The tracked layer's [W_q | W_v] at the last weight check.
  std::vector<float> last_weights;
  bool trial_active = false;
  // Optimizer steps of the model (and of the trial's copy) since its last load.
  int64_t main_updates = 0, trial_updates = 0;
  bool lora_phase = false;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_TRAINING_STATE_H_
