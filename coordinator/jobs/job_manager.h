// JobManager: the coordinator's jobs, as JobService sees them. Validates
// and accepts jobs (loading their data up front, so a bad spec or CSV is
// rejected at submit time with INVALID_ARGUMENT), and answers get, list,
// watch, cancel, delete, checkpoints and resume. It is given its parts,
// which whoever runs it builds (coordinator_server.cc) and which outlive it:
//   JobRegistry   (job_registry.h)  records, state machine, watchers, store;
//   JobScheduler  (job_scheduler.h) queued jobs in order, a number at once,
//                                   each on its own thread;
//   JobRunner     (job_runner.h)    a job's attempts, failover, the monitor.
// What a finished job answers (what-if, predict, probe) is JobQueries'
// (job_queries.h). Jobs share workers: a worker keeps each job's model
// apart and runs their tasks in turn.
//
// Checkpoints and recovery: a running job's trainer hands it a checkpoint
// every training.checkpoint_every steps and at the switch. The newest is
// kept in memory, and with a state directory written under it
// (checkpoint.h). When a step fails because a worker is gone (UNAVAILABLE,
// a deadline, or a worker that lost the job), the job goes back to its
// newest checkpoint on the workers that are live then (a live worker of the
// same kind, or a data-parallel group shrunk to the GPU workers left) and
// replays the steps since, up to max_failovers times in a row. A coordinator started
// on the same state directory resumes every job that was running from its
// newest checkpoint file, and ResumeJob queues a failed or cancelled job
// again from one. Each of these is a Recovery in the job's history.
// Thread-safe.
#ifndef HPT_COORDINATOR_JOBS_JOB_MANAGER_H_
#define HPT_COORDINATOR_JOBS_JOB_MANAGER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/dispatch/worker_pool.h"
#include "coordinator/jobs/coordinator_metrics.h"
#include "coordinator/jobs/job_registry.h"
#include "coordinator/jobs/job_runner.h"
#include "coordinator/jobs/job_scheduler.h"
#include "coordinator/training/checkpoint.h"
#include "data/text_file.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

class JobManager {
 public:
  using Watcher = JobRegistry::Watcher;

  struct Options {
    DataLimits data_limits;  // what a job's data files may be
    // How long loading a job's data may take (--max_load_s).
    absl::Duration max_load_time = absl::Seconds(120);
  };
  // What the manager runs jobs with. Each must outlive it. At construction
  // every job in the registry's store comes back: finished ones as they
  // were, queued ones re-queued, and ones that were running re-queued from
  // their newest checkpoint file (from step 0 without one).
  struct Parts {
    JobRegistry* registry = nullptr;
    JobRunner* runner = nullptr;
    JobScheduler* scheduler = nullptr;
    WorkerPool* pool = nullptr;
  };

  JobManager(Options options, Parts parts);
  ~JobManager();  // cancels running work and joins the scheduler

  // `owner`: the submitting user (auth.h), empty without authentication.
  absl::StatusOr<Job> Submit(const SubmitJobRequest& request, const std::string& owner = "");
  absl::StatusOr<Job> Get(const std::string& job_id) const;
  std::vector<Job> List() const;
  absl::StatusOr<Job> Cancel(const std::string& job_id);
  // Forgets a finished job and its files (JobService.DeleteJob).
  absl::StatusOr<DeleteJobResponse> Delete(const std::string& job_id);
  // The job's checkpoints, oldest first.
  absl::StatusOr<std::vector<CheckpointInfo>> Checkpoints(const std::string& job_id) const;
  // Queues a failed or cancelled job again from its checkpoint of `step`
  // (0: the newest; from step 0 when it has none).
  absl::StatusOr<Job> Resume(const std::string& job_id, int64_t step);

  // Calls `watcher` now with the job, then after every change, until
  // Unwatch. The watcher runs under the registry's lock: it must not block
  // or call back into the manager.
  absl::StatusOr<int64_t> Watch(const std::string& job_id, Watcher watcher);
  void Unwatch(int64_t token);

  static bool IsTerminal(JobState state) { return JobRegistry::IsTerminal(state); }

 private:
  // Loads a job's data under data_limits and max_load_time; `cancellable`:
  // a cancel of `job_id` stops it.
  absl::StatusOr<WindowDataset> LoadData(const std::string& job_id, const DataSpec& spec,
                                         DataSummary* summary, bool cancellable);
  // After a load for Submit or Resume: queues the job with its data, or
  // ends it FAILED (CANCELLED when cancelled meanwhile) and returns why.
  absl::StatusOr<Job> FinishLoading(const std::string& job_id,
                                    absl::StatusOr<WindowDataset> data,
                                    const DataSummary& summary, const char* what);
  // A warning when the job asks for more GPU workers than are registered
  // now (it waits for them, then fails); empty when there are enough.
  std::string CapacityNote(const JobSpec& spec) const;
  // Brings back the store's jobs (constructor).
  void Recover();
  // A stored job that was not finished: its data again, then the queue.
  void Requeue(JobRegistry::Locked& record);
  const std::string& state_dir() const { return registry_->options().state_dir; }
  JobStore* store() const { return registry_->options().store; }

  const Options options_;
  JobRegistry* const registry_;
  JobRunner* const runner_;
  JobScheduler* const scheduler_;
  WorkerPool* const pool_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_JOB_MANAGER_H_
