// SwitchPolicy: the phase switch decided outside the job's own phase
// controller (phase_controller.h). The coordinator's jobs have none: their
// controller decides. A study of when to switch gives the trainer one
// (Trainer::Options::switch_policy): the trainer then hands it each
// full-phase step's losses, with the tracked layer's weight distance at a
// check window's end, does what it answers, and never asks the controller.
//
//   SamplingPolicy sampling(spec.hpt().check_window_steps());
//   options.switch_policy = &sampling;  // trains in full, keeps the inputs
//   ... ReplaySwitch(controller_options, sampling.samples())
#ifndef HPT_COORDINATOR_TRAINING_SWITCH_POLICY_H_
#define HPT_COORDINATOR_TRAINING_SWITCH_POLICY_H_

#include <cstdint>
#include <vector>

#include "coordinator/training/phase_controller.h"

namespace hpt {

class SwitchPolicy {
 public:
  enum class Decision {
    kContinue,      // train on in the full phase
    kRestartTrial,  // a fresh LoRA trial copy in place of the last
    kSwitch,        // the LoRA phase from the next step
  };
  virtual ~SwitchPolicy() = default;

  // A run resumed in the full phase, before its first step (`step`). A
  // switch here starts the LoRA phase at the checkpoint's step.
  virtual Decision AtResume(int64_t step) = 0;
  // After each full-phase step (and its trial's step, where one trains).
  virtual Decision AfterStep(const ControllerSample& sample) = 0;
};

// Never switches. Keeps every full-phase step's inputs, and from the third
// check window on starts a fresh LoRA trial at each window's end, which
// trains beside the model over the next window: the samples ReplaySwitch
// needs to find any rule's switch from one run. Not thread-safe (a
// trainer calls it from its one thread).
class SamplingPolicy : public SwitchPolicy {
 public:
  explicit SamplingPolicy(int64_t check_window_steps);
  Decision AtResume(int64_t) override { return Decision::kContinue; }
  Decision AfterStep(const ControllerSample& sample) override;
  const std::vector<ControllerSample>& samples() const { return samples_; }

 private:
  const int64_t window_;
  std::vector<ControllerSample> samples_;
};

// Switches before the first step of a resumed run: the switch forced at
// the checkpoint's step.
class SwitchAtResumePolicy : public SwitchPolicy {
 public:
  Decision AtResume(int64_t) override { return Decision::kSwitch; }
  Decision AfterStep(const ControllerSample&) override { return Decision::kContinue; }
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_SWITCH_POLICY_H_
