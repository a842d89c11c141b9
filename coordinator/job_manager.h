// JobManager: the coordinator's job registry and scheduler. Validates and
// accepts jobs (loading their data up front, so a bad spec or CSV is
// rejected at submit time with INVALID_ARGUMENT), keeps each job's state
// machine (QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED), runs queued
// jobs in submission order, up to max_running_jobs at once (each on a
// thread of its own, so a job waiting for workers holds up no other), and
// notifies watchers. Jobs share workers: a worker keeps each job's model
// apart and runs their tasks in turn.
//
// Checkpoints and recovery: a running job's trainer hands it a checkpoint
// every training.checkpoint_every steps and at the switch. The newest is
// kept in memory, and with a state directory written under it
// (checkpoint.h). When a step fails because a worker is gone (UNAVAILABLE,
// a deadline, or a worker that lost the job), the job goes back to its
// newest checkpoint on the workers that are live then (a live worker of the
// same kind, or a data-parallel group shrunk to the GPU workers left) and
// replays the steps since, up to max_failovers times. A coordinator started
// on the same state directory resumes every job that was running from its
// newest checkpoint file, and ResumeJob queues a failed or cancelled job
// again from one. Each of these is a Recovery in the job's history.
// Thread-safe.
#ifndef HPT_COORDINATOR_JOB_MANAGER_H_
#define HPT_COORDINATOR_JOB_MANAGER_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/job_store.h"
#include "coordinator/trainer.h"
#include "coordinator/worker_client.h"
#include "coordinator/worker_pool.h"
#include "data/text_file.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

class RendezvousStore;

class JobManager {
 public:
  using ClientFactory =
      std::function<std::unique_ptr<WorkerClient>(const std::string& address,
                                                  const std::string& kind)>;
  using Watcher = std::function<void(const Job&)>;

  struct Options {
    ClientFactory client_factory;
    CoordinatorMetrics* metrics = nullptr;  // optional
    // The c10d store data-parallel jobs rendezvous at, started on the first
    // call (so nothing listens for it while no such job has run); unset:
    // data-parallel jobs fail with a clear error.
    std::function<absl::StatusOr<RendezvousStore*>()> rendezvous;
    absl::Duration worker_wait = absl::Seconds(30);
    int max_retained_jobs = 100;  // finished jobs beyond this are forgotten
    int max_running_jobs = 4;     // jobs training (or waiting for workers) at once
    DataLimits data_limits;       // what a job's data files may be
    // How long loading a job's data may take (--max_load_s).
    absl::Duration max_load_time = absl::Seconds(120);
    // The durable registry (--state_dir); null: jobs live in memory only.
    // At construction every stored job comes back: finished ones as they
    // were, queued ones re-queued, and ones that were running re-queued
    // from step 0 (there are no checkpoints yet).
    JobStore* store = nullptr;
    // Where checkpoint files go (<state_dir>/checkpoints/<job id>); empty:
    // the newest checkpoint is kept in memory only.
    std::string state_dir;
    // Times a job goes back to a checkpoint after losing a worker.
    int max_failovers = 3;
  };

  JobManager(Options options, WorkerPool* pool);
  ~JobManager();  // cancels running work and joins the scheduler

  // `owner`: the submitting user (auth.h), empty without authentication.
  absl::StatusOr<Job> Submit(const SubmitJobRequest& request, const std::string& owner = "");
  absl::StatusOr<Job> Get(const std::string& job_id) const;
  std::vector<Job> List() const;
  absl::StatusOr<Job> Cancel(const std::string& job_id);
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

  static bool IsTerminal(JobState state);

 private:
  struct Record {
    Job job;
    std::unique_ptr<WindowDataset> data;
    bool cancel_requested = false;
    std::shared_ptr<const TrainedModel> trained;  // after success
    absl::Time persisted = absl::InfinitePast();   // last write to the store
    std::shared_ptr<const Checkpoint> checkpoint;  // the one to resume from
    // The running attempt's workers: a cancel aborts their calls, and so
    // does the pool losing one of them.
    std::vector<WorkerClient*> clients;
  };

  // Loads a job's data under data_limits and max_load_time; `cancellable`:
  // a cancel of `job_id` stops it (the caller must not hold mu_).
  absl::StatusOr<WindowDataset> LoadData(const std::string& job_id, const DataSpec& spec,
                                         DataSummary* summary, bool cancellable);
  // After a load for Submit or Resume: queues the job with its data, or
  // ends it FAILED (CANCELLED when cancelled meanwhile) and returns why.
  absl::StatusOr<Job> FinishLoading(const std::string& job_id,
                                    absl::StatusOr<WindowDataset> data,
                                    const DataSummary& summary, const char* what);

  void SchedulerLoop();
  // Four times a second: aborts the calls of running jobs to workers the
  // pool no longer counts live (a stopped worker's calls would otherwise
  // wait for their deadline).
  void MonitorLoop();
  void RunJob(const std::string& job_id);
  // One attempt: acquires workers (`failover`: as many GPU workers as are
  // live, at least one), trains from `resume` (null: from the start), and
  // releases them.
  // `trained`: set when the trainer ran (the workers were there).
  absl::Status Attempt(const std::string& job_id, const JobSpec& spec, const WindowDataset* data,
                       std::shared_ptr<const Checkpoint> resume, bool failover, bool* trained);
  // The newest checkpoint of the job in memory or on disk (null: none).
  std::shared_ptr<const Checkpoint> LatestCheckpoint(const std::string& job_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Records that the job went back to `from_step`.
  void AddRecovery(Record& record, const std::string& cause, int64_t from_step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetState(Record& record, JobState state, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateCounts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the job to the store, if any (always when `force`, else at
  // most once a second per job); a failed write is logged, not fatal.
  void Persist(Record& record, bool force) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Recover() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForgetOldJobs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Where a succeeded job's model is kept under state_dir.
  std::string ModelDir(const std::string& job_id) const;
  absl::StatusOr<Record*> Find(const std::string& job_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  WorkerPool* const pool_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Record>> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> request_ids_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::multimap<std::string, std::pair<int64_t, Watcher>> watchers_
      ABSL_GUARDED_BY(mu_);
  int64_t next_job_ = 1 ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, std::thread> runners_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> finished_runners_ ABSL_GUARDED_BY(mu_);
  int64_t next_runner_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_token_ = 1 ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread scheduler_, monitor_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOB_MANAGER_H_
