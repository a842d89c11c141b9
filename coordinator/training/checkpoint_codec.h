// The checkpoint codec: a trainer's state to a CheckpointHeader and back
// (checkpoint.h writes and reads the files; the tensors are the workers'
// snapshots, gathered by the trainer). What a header holds: the job's
// reported state (TrainerUpdate), the trainer's position (TrainerCursor),
// the phase controller's windows and trial, and the cost ledger's work record.
//
//   CheckpointHeader h = EncodeCheckpointHeader(identity, state, cursor,
//                                               controller, ledger);
//   RETURN_IF_ERROR(DecodeCheckpointHeader(h, expected, &state, &cursor,
//                                          controller, &ledger));
#ifndef HPT_COORDINATOR_TRAINING_CHECKPOINT_CODEC_H_
#define HPT_COORDINATOR_TRAINING_CHECKPOINT_CODEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/dispatch/worker_client.h"
#include "coordinator/training/cost_ledger.h"
#include "coordinator/training/phase_controller.h"
#include "coordinator/training/training_state.h"
#include "proto/checkpoint.pb.h"

namespace hpt {

// What names a checkpoint: whose, where, when and why.
struct CheckpointIdentity {
  std::string job_id;
  int64_t step = 0;
  int64_t time_unix_ms = 0;
  CheckpointCause::Name cause = CheckpointCause::CHECKPOINT_CAUSE_UNSPECIFIED;
  std::string reason;    // the cause in words
  double elapsed_s = 0;  // the job's training time so far
  ModelConfig model;
};

// `controller` may be null (a job without HpT).
CheckpointHeader EncodeCheckpointHeader(const CheckpointIdentity& identity,
                                        const TrainerUpdate& state, const TrainerCursor& cursor,
                                        const PhaseController* controller,
                                        const CostLedger& ledger);

// Checks that `header` is `expected.job_id`'s and was made with
// `cursor->steps_per_epoch` steps per epoch (FAILED_PRECONDITION if not),
// then restores the rest (the ledger's work record among it). Returns the
// checkpoint's model and elapsed time in `identity`.
absl::Status DecodeCheckpointHeader(const CheckpointHeader& header, CheckpointIdentity* identity,
                                    TrainerUpdate* state, TrainerCursor* cursor,
                                    PhaseController* controller, CostLedger* ledger);

// A phase-controller event as the job reports it, stamped `time_unix_ms`.
PhaseEvent ToPhaseEvent(const ControllerEvent& event, int64_t time_unix_ms);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_CHECKPOINT_CODEC_H_
