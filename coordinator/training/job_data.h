// Builds a job's windowed data set from its DataSpec: synthetic series, or
// files read by the coordinator within `limits`. Errors name the spec field,
// or the file and line of a bad cell: INVALID_ARGUMENT for bad content or a
// node that is not a regular file, NOT_FOUND for a missing file,
// PERMISSION_DENIED for a path outside the data roots. No error carries a
// refused file's contents.
#ifndef HPT_COORDINATOR_TRAINING_JOB_DATA_H_
#define HPT_COORDINATOR_TRAINING_JOB_DATA_H_

#include "absl/status/statusor.h"
#include "data/text_file.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

// Checks the files `spec` names (where they are and what they are) without
// reading them: the fast refusals, errors as BuildJobData gives them.
absl::Status CheckJobDataPaths(const DataSpec& spec, const DataLimits& limits);

// `spec` must be normalised (NormalizeJobSpec). `summary`, if given, says
// what was loaded and what the loader repaired.
absl::StatusOr<WindowDataset> BuildJobData(const DataSpec& spec,
                                           DataSummary* summary = nullptr,
                                           const DataLimits& limits = DataLimits());

// The tokens of one of the job's samples (the model's sequence of
// stations), from what BuildJobData said of its data.
int64_t SampleTokens(const DataSummary& summary);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_JOB_DATA_H_
