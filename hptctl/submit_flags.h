// hptctl submit's flags: the job spec a submit builds from --spec and the
// job flags (--preset, --epochs, --csv, --check_window_steps, ...).
#ifndef HPT_HPTCTL_SUBMIT_FLAGS_H_
#define HPT_HPTCTL_SUBMIT_FLAGS_H_

#include "absl/status/statusor.h"
#include "proto/job_service.pb.h"

namespace hpt {

// The request from --spec and the flags (flags fill what the file leaves;
// both at once is INVALID_ARGUMENT naming the choice).
absl::StatusOr<SubmitJobRequest> BuildSubmit();

}  // namespace hpt

#endif  // HPT_HPTCTL_SUBMIT_FLAGS_H_
