// JobQueries: what a job answers without changing its course: its work
// record, loss curves and trained model (from the record, or read back
// from the store or the state directory after a restart), its report
// re-costed under other settings (what-if), its model's output (predict),
// and its full-phase step timed for real under each GPU baseline (probe,
// on a live GPU worker borrowed from the pool).
//
//   JobQueries queries(&registry, &pool, client_factory);
//   ASSIGN_OR_RETURN(WhatIfResponse w, queries.WhatIf(request));
//
// Thread-safe.
#ifndef HPT_COORDINATOR_JOBS_JOB_QUERIES_H_
#define HPT_COORDINATOR_JOBS_JOB_QUERIES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/dispatch/worker_pool.h"
#include "coordinator/jobs/job_registry.h"
#include "coordinator/jobs/job_runner.h"
#include "proto/job_service.pb.h"

namespace hpt {

class JobQueries {
 public:
  // `registry` and `pool` must outlive the queries.
  JobQueries(JobRegistry* registry, WorkerPool* pool, JobRunner::ClientFactory client_factory)
      : registry_(registry), pool_(pool), client_factory_(std::move(client_factory)) {}

  // What the job's devices did (proto/work.proto): the running trainer's
  // latest, or the store's. NOT_FOUND before its first step.
  absl::StatusOr<std::shared_ptr<const WorkRecord>> WorkRecordOf(const std::string& job_id) const;
  // The job's loss curves for plots (step_history.h): the running
  // trainer's, or the store's; empty before its first step.
  absl::StatusOr<JobHistory> HistoryOf(const std::string& job_id, int max_points) const;
  // The trained model of a succeeded job (LoRA merged); with a state
  // directory it is also on disk, so it survives a restart.
  absl::StatusOr<std::shared_ptr<const TrainedModel>> TrainedModelOf(
      const std::string& job_id) const;
  // The job's report re-costed under `settings` (KEY=VALUE, record_costing.h).
  absl::StatusOr<WhatIfResponse> WhatIf(const WhatIfRequest& request) const;
  // The trained model's output for request.input (models/predict.h).
  absl::StatusOr<PredictResponse> Predict(const PredictRequest& request) const;
  // Times a succeeded job's full-phase step under each GPU baseline on a
  // live GPU worker (`steps` timed steps each; 0: 10), adds the figures to
  // its work record and returns the job re-costed with them. Blocks while
  // the probe runs (seconds to minutes; the worker runs nothing else).
  absl::StatusOr<Job> ProbeBaselines(const std::string& job_id, int64_t steps) const;

 private:
  JobRegistry* const registry_;
  WorkerPool* const pool_;
  const JobRunner::ClientFactory client_factory_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_JOB_QUERIES_H_
