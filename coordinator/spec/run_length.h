// How long a normalised job runs in steps, and what that leaves the phase
// controller: the trainer's epoch and the note a submission gets when its
// run ends before the first check.
//
//   const int64_t steps = spec.training().epochs() * StepsPerEpoch(spec, n);
//   if (std::string note = NoCheckNote(spec, n); !note.empty()) notes.push_back(note);
#ifndef HPT_COORDINATOR_SPEC_RUN_LENGTH_H_
#define HPT_COORDINATOR_SPEC_RUN_LENGTH_H_

#include <cstdint>
#include <string>

#include "proto/job_service.pb.h"

namespace hpt {

// Optimizer steps in one epoch over `train_samples` training samples:
// whole batches, less a last one smaller than the data-parallel width
// asked for (it cannot be sharded; the width asked for, not the workers a
// run has, so a failover keeps the epoch's steps), at most
// training.max_steps_per_epoch. 0 when the samples make no step.
int64_t StepsPerEpoch(const JobSpec& spec, int64_t train_samples);

// For an HpT job whose steps end before the phase controller's first
// check (common/check_windows.h: the third window, or more under the
// trend rule), so that it trains every
// parameter throughout: its steps, the check's step, and the epochs that
// would reach it. "" for a job that reaches a check, or a full-parameter
// job.
std::string NoCheckNote(const JobSpec& spec, int64_t train_samples);

}  // namespace hpt

#endif  // HPT_COORDINATOR_SPEC_RUN_LENGTH_H_
