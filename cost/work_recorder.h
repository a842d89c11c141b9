// WorkRecorder: a job's work record (proto/work.proto) as its steps run.
// Each step's tasks, without what was measured, are its shape; a shape
// seen before counts once more, so a record holds a few shapes however
// long the job (the full phase's steps, trial steps, LoRA-phase steps, the
// switch, recoveries, and the work outside steps such as evaluation).
//
//   WorkRecorder recorder;
//   recorder.AddStep(CostPhase::full, main_tasks, trial_tasks, /*ranks=*/1, step, wall_s);
//   const WorkRecord& record = recorder.record();
//
// Not thread-safe.
#ifndef HPT_COST_WORK_RECORDER_H_
#define HPT_COST_WORK_RECORDER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cost/finished_task.h"
#include "proto/work.pb.h"

namespace hpt {

class WorkRecorder {
 public:
  WorkRecorder();

  // What AddStep counted for one step: its shape's index (the shape holds
  // its phase and ranks) and what its tasks measured on GPUs, so the same
  // tasks again count without being read again (RepeatStep).
  struct StepTally {
    int shape = -1;
    bool gpu = false;  // a task of the step ran on a GPU
    double main_s = 0, main_j = 0, trial_s = 0, all_j = 0;
  };
  // Adds a step of `phase` (a one-off, for switch and recovery; off_step
  // for work outside steps).
  StepTally AddStep(CostPhase::Name phase, const std::vector<FinishedTask>& main,
                    const std::vector<FinishedTask>& trial, int data_parallel_ranks, int64_t step,
                    double wall_s);
  // Adds step `step` with the tasks `tally`'s step had (each already passed
  // to Measure again): the record is what AddStep with those tasks makes,
  // without copying or serialising them. A run's steps do the same work.
  void RepeatStep(const StepTally& tally, int64_t step, double wall_s);
  // Notes a task's measured part on its device (every task, once).
  void Measure(const FinishedTask& task);

  WorkRecord& record() { return record_; }
  const WorkRecord& record() const { return record_; }
  // Takes over a checkpoint's record.
  void Restore(const WorkRecord& record);

 private:
  int DeviceIndex(const FinishedTask& task);
  RecordedTask ToRecorded(const FinishedTask& task);

  WorkRecord record_;
  std::map<std::string, int> device_index_;  // by worker address
  std::map<std::string, int> shape_index_;   // by serialised shape
};

}  // namespace hpt

#endif  // HPT_COST_WORK_RECORDER_H_
