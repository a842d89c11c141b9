// The phases a job's cost record keeps apart (proto/work.proto's
// CostPhase): the one list of them, their names as pages, metrics labels
// and JSON write them, and which of them are training steps.
//
//   for (CostPhase::Name p : kCostPhases) labels["phase"] = CostPhaseName(p);  // "lora_gpu"
//   if (!IsTrainingStep(shape.phase())) continue;  // a switch, recovery or evaluation
#ifndef HPT_COMMON_COST_PHASE_H_
#define HPT_COMMON_COST_PHASE_H_

#include <string>

#include "proto/work.pb.h"

namespace hpt {

// Every phase a cost report lists, in its order; off_step, which no
// report lists, last.
inline constexpr CostPhase::Name kCostPhases[] = {
    CostPhase::full,     CostPhase::partial,  CostPhase::switch_, CostPhase::lora,
    CostPhase::lora_gpu, CostPhase::recovery, CostPhase::off_step};

// "full", "partial", "switch", "lora", "lora_gpu", "recovery", "off_step";
// "" for COST_PHASE_UNSPECIFIED and any number no phase has.
const std::string& CostPhaseName(CostPhase::Name phase);

// True for the phases of training steps (full, partial, lora, lora_gpu):
// those a step's timeline and the per-step projection count; false for
// the one-off work between steps (switch, recovery, off_step).
bool IsTrainingStep(CostPhase::Name phase);

}  // namespace hpt

#endif  // HPT_COMMON_COST_PHASE_H_
