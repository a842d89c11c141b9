// Builds a job's windowed data set from its DataSpec: synthetic series, or a
// wide CSV read by the coordinator. Errors are INVALID_ARGUMENT naming the
// spec field, or the file, line and column of a bad CSV cell.
#ifndef HPT_COORDINATOR_JOB_DATA_H_
#define HPT_COORDINATOR_JOB_DATA_H_

#include "absl/status/statusor.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

// `spec` must be normalised (NormalizeJobSpec). `summary`, if given, says
// what was loaded and what the loader repaired.
absl::StatusOr<WindowDataset> BuildJobData(const DataSpec& spec,
                                           DataSummary* summary = nullptr);

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOB_DATA_H_
