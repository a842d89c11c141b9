// Checkpoint files: a job's training state at a step boundary (trainer.h
// makes them), one file per checkpoint under
// <state_dir>/checkpoints/<job id>/step-<step>.ckpt.
//
// A file is "HPTCKPT1" followed by records, each an 8-byte little-endian
// length and that many bytes: one CheckpointHeader (proto/checkpoint.proto),
// then header.tensors TensorChunk records, then an 8-byte zero. A file is
// written to a temporary name, fsync'ed, renamed into place and the folder
// fsync'ed, so a crash leaves either the old set or the new file whole.
// The newest `keep` files are kept.
#ifndef HPT_COORDINATOR_TRAINING_CHECKPOINT_H_
#define HPT_COORDINATOR_TRAINING_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "proto/checkpoint.pb.h"
#include "proto/job_service.pb.h"

namespace hpt {

struct Checkpoint {
  CheckpointHeader header;
  std::map<std::string, HostTensor> tensors;  // "model/<name>", "head/…", "trial/…"
};

// The tensors of `checkpoint` named "<prefix><name>", by <name>.
std::map<std::string, HostTensor> TensorsUnder(const Checkpoint& checkpoint,
                                               const std::string& prefix);

// `cause` in words, as a listing shows it; `every_steps` is the job's
// training.checkpoint_every (periodic checkpoints name it).
std::string CheckpointReason(CheckpointCause::Name cause, int64_t every_steps);

// What a listing shows of a checkpoint of `bytes` bytes.
CheckpointInfo InfoOf(const CheckpointHeader& header, int64_t bytes);

// The folder of `job_id`'s checkpoints under `state_dir`.
std::string CheckpointDir(const std::string& state_dir, const std::string& job_id);

// Writes `checkpoint` into `dir` (created if missing) and removes all but
// the newest `keep` (at least 1).
absl::StatusOr<CheckpointInfo> WriteCheckpoint(const std::string& dir,
                                               const Checkpoint& checkpoint, int keep);

// Deletes every checkpoint in `dir`, then `dir` if it is empty then.
void RemoveCheckpoints(const std::string& dir);

// The checkpoints in `dir`, oldest first; none when it does not exist.
// Files that do not read are skipped (and named on stderr).
std::vector<CheckpointInfo> ListCheckpoints(const std::string& dir);

// The checkpoint of `step` in `dir` (0: the newest). NOT_FOUND when there
// is none; DATA_LOSS when the file is damaged.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& dir, int64_t step = 0);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_CHECKPOINT_H_
