#include "common/cost_phase.h"

namespace hpt {

const std::string& CostPhaseName(CostPhase::Name phase) {
  static const std::string kNone;
  if (phase == CostPhase::COST_PHASE_UNSPECIFIED || !CostPhase::Name_IsValid(phase)) return kNone;
  return CostPhase::Name_Name(phase);
}

bool IsTrainingStep(CostPhase::Name phase) {
  switch (phase) {
    case CostPhase::full:
    case CostPhase::partial:
    case CostPhase::lora:
    case CostPhase::lora_gpu:
      return true;
    default:
      return false;
  }
}

}  // namespace hpt
