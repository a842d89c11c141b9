// A job's training phase (proto/job_service.proto's TrainingPhase): the phases
// in order, and each one's name as status, pages, metrics labels and JSON
// write it. A job that has not started (TRAINING_PHASE_UNSPECIFIED) is in
// the full phase.
//
//   labels["phase"] = PhaseName(job.hpt().phase());  // "full" for a new job
#ifndef HPT_COMMON_TRAINING_PHASE_H_
#define HPT_COMMON_TRAINING_PHASE_H_

#include <string>

#include "proto/job_service.pb.h"

namespace hpt {

// Every phase a job can be in, in the order a job passes through them.
inline constexpr TrainingPhase::Name kTrainingPhases[] = {TrainingPhase::full, TrainingPhase::trial,
                                                          TrainingPhase::lora};

// `phase`, with TRAINING_PHASE_UNSPECIFIED (and any number no phase has)
// read as full.
TrainingPhase::Name PhaseOrFull(TrainingPhase::Name phase);

// "full", "trial" or "lora", for PhaseOrFull(phase).
const std::string& PhaseName(TrainingPhase::Name phase);

}  // namespace hpt

#endif  // HPT_COMMON_TRAINING_PHASE_H_
