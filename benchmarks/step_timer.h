// Times a trainer's updates for device_step_bench: the wall time of its
// steps per phase, each step split into compute per device kind (the tasks'
// measured time) and the rest, and the wall time of the last evaluation.
//
// A phase trains in runs of steps and reports once at a run's end, so an
// update may stand for several steps: a run's wall time counts for all of
// them. Not counted: the run that switched phase (its update names the new
// phase), and progress updates sent while a split is evaluated, which
// neither end a step nor end the evaluation.
//
// The mean is the run's cost; the median is a typical step's. They part
// where a few steps carry one-time work: the first steps of a phase, and on
// the ReRAM worker each layer's first read of a direction and every 64th
// after, which also runs the bit-exact path to calibrate the ADC error
// (devices/reram/reram_layer.h).
#ifndef HPT_BENCHMARKS_STEP_TIMER_H_
#define HPT_BENCHMARKS_STEP_TIMER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coordinator/training/training_state.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

namespace hpt {

class StepTimer {
 public:
  struct Totals {
    double wall_s = 0;
    std::map<DeviceKind::Name, double> compute_s;
    // Each step's wall time: a run's, divided over its steps.
    std::vector<double> step_s;
    int64_t steps() const { return static_cast<int64_t>(step_s.size()); }
    // The median of step_s; 0 where there is none.
    double median_step_s() const;
  };

  // Starts the clock at `start_s`, on the caller's clock in seconds.
  explicit StepTimer(double start_s) : last_s_(start_s) {}

  // An update from the trainer, received at `now_s`.
  void Observe(const TrainerUpdate& u, double now_s);

  // Empty where none of `phase`'s steps was timed.
  Totals PhaseTotals(TrainingPhase::Name phase) const;
  // The last evaluation's wall time, and the phase it ran in.
  double eval_s() const { return eval_s_; }
  TrainingPhase::Name eval_phase() const { return eval_phase_; }

  // Prints each phase's steps, their ratio and the last evaluation.
  void Report(int64_t test_values) const;

 private:
  std::map<TrainingPhase::Name, Totals> by_phase_;
  double last_s_;
  int64_t last_step_ = -1;
  size_t last_epochs_ = 0;
  TrainingPhase::Name last_phase_ = TrainingPhase::TRAINING_PHASE_UNSPECIFIED;
  std::map<DeviceKind::Name, double> last_measured_;
  double eval_s_ = 0;
  TrainingPhase::Name eval_phase_ = TrainingPhase::TRAINING_PHASE_UNSPECIFIED;
};

}  // namespace hpt

#endif  // HPT_BENCHMARKS_STEP_TIMER_H_
