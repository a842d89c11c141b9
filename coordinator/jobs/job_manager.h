// JobManager: the coordinator's jobs, as JobService sees them. Validates
// and accepts jobs (loading their data up front, so a bad spec or CSV is
// rejected at submit time with INVALID_ARGUMENT), and answers get, list,
// watch, cancel, resume and export. Built from three parts:
//   JobRegistry   (job_registry.h)  records, state machine, watchers, store;
//   JobScheduler  (job_scheduler.h) queued jobs in order, max_running_jobs
//                                   at once, each on its own thread;
//   JobRunner     (job_runner.h)    a job's attempts, failover, the monitor.
// Jobs share workers: a worker keeps each job's model apart and runs their
// tasks in turn.
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

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/dispatch/worker_client.h"
#include "coordinator/dispatch/worker_pool.h"
#include "coordinator/jobs/coordinator_metrics.h"
#include "coordinator/jobs/job_registry.h"
#include "coordinator/jobs/job_runner.h"
#include "coordinator/jobs/job_scheduler.h"
#include "coordinator/jobs/job_store.h"
#include "coordinator/training/checkpoint.h"
#include "coordinator/training/trainer.h"
#include "data/text_file.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

class RendezvousStore;

class JobManager {
 public:
  using ClientFactory = JobRunner::ClientFactory;
  using Watcher = JobRegistry::Watcher;

  struct Options {
    ClientFactory client_factory;
    CoordinatorMetrics* metrics = nullptr;  // optional
    // The c10d store data-parallel jobs rendezvous at, started on the first
    // call (so nothing listens for it while no such job has run); unset:
    // data-parallel jobs fail with a clear error.
    std::function<absl::StatusOr<RendezvousStore*>()> rendezvous;
    absl::Duration worker_wait = JobRunner::kDefaultWorkerWait;
    int max_retained_jobs = 100;  // finished jobs beyond this are forgotten
    int max_running_jobs = 4;     // jobs training (or waiting for workers) at once
    DataLimits data_limits;       // what a job's data files may be
    // How long loading a job's data may take (--max_load_s).
    absl::Duration max_load_time = absl::Seconds(120);
    // The durable registry (--state_dir); null: jobs live in memory only.
    // At construction every stored job comes back: finished ones as they
    // were, queued ones re-queued, and ones that were running re-queued
    // from their newest checkpoint file (from step 0 without one).
    JobStore* store = nullptr;
    // Where checkpoint files go (<state_dir>/checkpoints/<job id>); empty:
    // the newest checkpoint is kept in memory only.
    std::string state_dir;
    // Times in a row (without a step of progress between them) a job goes
    // back to a checkpoint after losing a worker.
    int max_failovers = 3;
  };

  JobManager(Options options, WorkerPool* pool);
  ~JobManager();  // cancels running work and joins it

  // `owner`: the submitting user (auth.h), empty without authentication.
  absl::StatusOr<Job> Submit(const SubmitJobRequest& request, const std::string& owner = "");
  absl::StatusOr<Job> Get(const std::string& job_id) const;
  // What the job's devices did (proto/work.proto): the running trainer's
  // latest, or the store's. NOT_FOUND before its first step.
  absl::StatusOr<std::shared_ptr<const WorkRecord>> WorkRecordOf(const std::string& job_id) const;
  // The job's report re-costed under `settings` (KEY=VALUE, record_costing.h).
  absl::StatusOr<WhatIfResponse> WhatIf(const WhatIfRequest& request) const;
  // The job's loss curves for plots (step_history.h): the running
  // trainer's, or the store's; empty before its first step.
  absl::StatusOr<JobHistory> HistoryOf(const std::string& job_id, int max_points) const;
  // The trained model's output for request.input (models/predict.h).
  absl::StatusOr<PredictResponse> Predict(const PredictRequest& request) const;
  // Times a succeeded job's full-phase step under each GPU baseline on a
  // live GPU worker (`steps` timed steps each; 0: 10), adds the figures to
  // its work record and returns the job re-costed with them. Blocks while
  // the probe runs (seconds to minutes; the worker runs nothing else).
  absl::StatusOr<Job> ProbeBaselines(const std::string& job_id, int64_t steps);
  std::vector<Job> List() const;
  absl::StatusOr<Job> Cancel(const std::string& job_id);
  // Forgets a finished job and its files (JobService.DeleteJob).
  absl::StatusOr<DeleteJobResponse> Delete(const std::string& job_id);
  // The job's checkpoints, oldest first.
  absl::StatusOr<std::vector<CheckpointInfo>> Checkpoints(const std::string& job_id) const;
  // Queues a failed or cancelled job again from its checkpoint of `step`
  // (0: the newest; from step 0 when it has none).
  absl::StatusOr<Job> Resume(const std::string& job_id, int64_t step);
  // The trained model of a succeeded job (LoRA merged); with a state
  // directory it is also on disk, so it survives a restart.
  absl::StatusOr<std::shared_ptr<const TrainedModel>> TrainedModelOf(
      const std::string& job_id) const;

  // Calls `watcher` now with the job, then after every change, until
  // Unwatch. The watcher runs under the manager's lock: it must not block
  // or call back into the manager.
  absl::StatusOr<int64_t> Watch(const std::string& job_id, Watcher watcher);
  void Unwatch(int64_t token);

  static bool IsTerminal(JobState state) { return JobRegistry::IsTerminal(state); }

 private:
  // Loads a job's data under data_limits and max_load_time; `cancellable`:
  // a cancel of `job_id` stops it (the caller must not hold the lock).
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
  void Requeue(JobRegistry::Record& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(registry_.mu());

  const Options options_;
  WorkerPool* const pool_;
  mutable JobRegistry registry_;
  JobRunner runner_;
  JobScheduler scheduler_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_JOB_MANAGER_H_
