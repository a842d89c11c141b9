#include "common/training_phase.h"

namespace hpt {

TrainingPhase::Name PhaseOrFull(TrainingPhase::Name phase) {
  if (phase == TrainingPhase::TRAINING_PHASE_UNSPECIFIED || !TrainingPhase::Name_IsValid(phase)) {
    return TrainingPhase::full;
  }
  return phase;
}

const std::string& PhaseName(TrainingPhase::Name phase) {
  return TrainingPhase::Name_Name(PhaseOrFull(phase));
}

}  // namespace hpt
