// The arithmetic between a job's costed steps and its report
// (docs/cost-model.md): how a step's tasks are laid on the cost timeline,
// how steps add up to phases, and how the phases compare with GPU-only
// full-parameter training, projected to the paper's length.
//
//   RecordedPhases phases;
//   phases.Add(CostPhase::full, /*count=*/120, step, main_only);
//   CostComparison c = Compare(phases, inputs);
#ifndef HPT_COST_COST_COMPARISON_H_
#define HPT_COST_COST_COMPARISON_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cost/cost_timeline.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

namespace hpt {

// One task as the timeline lays it.
struct LayTask {
  int device = 0;     // who it ran on (data-parallel ranks pair by it)
  std::string track;  // the timeline resource
  DeviceKind::Name kind = DeviceKind::DEVICE_KIND_UNSPECIFIED;
  std::string type;   // load, forward, backward, update
  int64_t samples = 1;
  int64_t bytes_in = 0;
  double simulated_s = 0, energy_j = 0;
};

// A piece laid on the timeline: its id there, and the index of the task it
// is (a pipelined task is one piece a sample).
struct LaidPiece {
  int id = 0;
  int task = 0;
};

// Lays `tasks` on `timeline`: a data-parallel step (`ranks` > 1; the
// update's allreduce moves `trainable_bytes`), a pipelined chain of device
// segments (tasks of several samples), or a plain chain. Appends the
// pieces laid, in order, to `pieces` when given.
void LayTasks(const std::vector<LayTask>& tasks, int ranks, int64_t trainable_bytes,
              CostTimeline* timeline, std::vector<LaidPiece>* pieces = nullptr);

// A laid step's totals.
struct StepTotals {
  double makespan_s = 0, energy_j = 0;
  std::map<std::string, double> busy_s, energy_by_kind;  // energy also "interconnect"
  static StepTotals Of(const CostTimeline& timeline);
};

// Steps added up by phase.
class RecordedPhases {
 public:
  RecordedPhases();
  // `count` steps of `phase` costing `step` each; `main_only` is the same
  // without its trial tasks (what GPU-only would run in the full phase).
  void Add(CostPhase::Name phase, double count, const StepTotals& step,
           const StepTotals& main_only);
  // The phase's costs: one of the members below; null for off_step.
  PhaseCost* Of(CostPhase::Name phase);
  // Steps and wall time as the record measured them.
  void SetMeasured(const WorkRecord& record);
  // The full phase's GPU steps as a measured step instead: `step_s` and
  // `step_j` a main-chain step (0 J: energy not measured, left 0), and
  // `with_trials` the factor the trial's tasks add to it.
  void SetMeasuredFull(double step_s, double step_j, double with_trials);
  // The phases that ran, in the report's order.
  std::vector<PhaseCost> Listed() const;
  // The training steps `phase` ran (0 for the switch, recovery, off_step).
  int64_t Steps(CostPhase::Name phase) const { return steps_[phase]; }

  // `partial`: full-phase steps with some layers switched (layerwise) on
  // the devices; GPU-only training would run them as full steps.
  PhaseCost full, partial, switch_cost, lora, fallback, recovery;
  double gpu_only_full_s = 0, gpu_only_full_j = 0;

 private:
  std::array<int64_t, CostPhase::Name_ARRAYSIZE> steps_{};
};

struct ComparisonInputs {
  int64_t steps_per_epoch = 0;
  double project_epochs = 0;
  int64_t switch_step = -1;  // first LoRA step; -1: no switch
};

// HpT against GPU-only, as run and projected, with the method in words.
CostComparison Compare(const RecordedPhases& phases, const ComparisonInputs& in);

// Where the time goes, from the devices' totals.
void AddTimeNotes(const std::vector<DeviceCost>& devices, const RecordedPhases& phases,
                  CostComparison* comparison);

}  // namespace hpt

#endif  // HPT_COST_COST_COMPARISON_H_
