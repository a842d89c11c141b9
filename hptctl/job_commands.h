// hptctl's commands on the job list and on one finished job: list (by
// state), cancel's wait, delete (after saying what goes and asking) and
// the baseline probe.
#ifndef HPT_HPTCTL_JOB_COMMANDS_H_
#define HPT_HPTCTL_JOB_COMMANDS_H_

#include <string>

#include "absl/status/status.h"
#include "proto/job_service.grpc.pb.h"

namespace hpt {

// hptctl list [--state=STATE].
int ListCommand(JobService::Stub& stub);
// After a cancel: waits up to 10 s for `job` to reach a terminal state
// (a running job stops at its next step boundary), updating it.
absl::Status AwaitCancel(JobService::Stub& stub, Job* job);
// hptctl delete JOB [--yes].
int DeleteCommand(JobService::Stub& stub, const std::string& job_id);
// hptctl probe JOB [--probe_steps=N].
int ProbeCommand(JobService::Stub& stub, const std::string& job_id);

}  // namespace hpt

#endif  // HPT_HPTCTL_JOB_COMMANDS_H_
