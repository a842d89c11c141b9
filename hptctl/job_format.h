// How hptctl renders jobs: one-line rows, a progress bar, a summary, and
// the exit code each outcome maps to. Pure functions, tested on their own.
#ifndef HPT_HPTCTL_JOB_FORMAT_H_
#define HPT_HPTCTL_JOB_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cost/text_report.h"
#include "proto/job_service.pb.h"

namespace hpt {

// Stable exit codes of hptctl (documented in docs/jobs.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitJobFailed = 1,     // the watched job ended FAILED or CANCELLED
  kExitUsage = 2,         // bad command line
  kExitInvalid = 3,       // the coordinator rejected or refused the request's content
  kExitNotFound = 4,      // no such job
  kExitUnavailable = 5,   // coordinator unreachable or timed out
  kExitError = 6,         // anything else
};

ExitCode ExitCodeFor(const absl::Status& status);
// Prints "hptctl: CODE: message" to stderr; returns ExitCodeFor(status).
int PrintFailure(const absl::Status& status);
// `list`'s table: a header and a row per job (its phase and switch step;
// "never" for an HpT job that succeeded without one).
std::string FormatList(const std::vector<Job>& jobs);
// "[#####.....]  50% epoch 2/3 step 10/20 loss 0.1234 ..."; width in chars.
std::string FormatProgress(const Job& job, int bar_width);
std::string FormatSummary(const Job& job);    // multi-line, for status/watch
// A table of a job's checkpoints, for `hptctl checkpoints`.
std::string FormatCheckpoints(const std::string& job_id,
                              const std::vector<CheckpointInfo>& checkpoints);

// A message as indented JSON with the protos' own field names.
std::string ToJson(const google::protobuf::Message& message);

// A row range flag's value "BEGIN:END" (--train_rows, --test_rows);
// INVALID_ARGUMENT naming the flag otherwise.
absl::Status ParseRows(const std::string& flag, const std::string& value, int64_t* begin,
                       int64_t* end);

}  // namespace hpt

#endif  // HPT_HPTCTL_JOB_FORMAT_H_
