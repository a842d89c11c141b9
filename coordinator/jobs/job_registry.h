// JobRegistry: the coordinator's jobs as records: each job's Job message
// (its state machine QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED),
// its loaded data, its newest checkpoint in memory, its trained model and
// the workers of its running attempt. It notifies watchers of every
// change, writes jobs through to the durable store (job_store.h), keeps the
// job-count metrics, and forgets the oldest finished jobs past a limit.
//
// One mutex guards every record; the job manager and the runner take it
// through mu() and call the methods marked ABSL_EXCLUSIVE_LOCKS_REQUIRED
// under it:
//
//   absl::MutexLock lock(&registry.mu());
//   ASSIGN_OR_RETURN(JobRegistry::Record* record, registry.Find(job_id));
//   registry.SetState(*record, RUNNING, "");
//
// Thread-safe under that discipline.
#ifndef HPT_COORDINATOR_JOBS_JOB_REGISTRY_H_
#define HPT_COORDINATOR_JOBS_JOB_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/dispatch/worker_client.h"
#include "coordinator/jobs/coordinator_metrics.h"
#include "coordinator/jobs/job_store.h"
#include "coordinator/training/checkpoint.h"
#include "coordinator/training/step_history.h"
#include "coordinator/training/trainer.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

class JobRegistry {
 public:
  using Watcher = std::function<void(const Job&)>;

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
    // What its devices did (proto/work.proto): the latest the trainer
    // reported; written to the store with the job when it is forced there.
    std::shared_ptr<const WorkRecord> work_record;
    std::shared_ptr<const WorkRecord> stored_record;  // the one last written
    // Loss per step and epoch (step_history.h), shared with the trainer;
    // written to the store when the job is forced there.
    std::shared_ptr<StepHistory> history;
  };

  struct Options {
    CoordinatorMetrics* metrics = nullptr;  // optional
    JobStore* store = nullptr;              // null: jobs live in memory only
    std::string state_dir;                  // checkpoint and model files; may be empty
    int max_retained_jobs = 100;            // finished jobs beyond this are forgotten
  };

  explicit JobRegistry(Options options) : options_(std::move(options)) {}

  static bool IsTerminal(JobState state);

  absl::Mutex& mu() ABSL_LOCK_RETURNED(mu_) { return mu_; }

  // NOT_FOUND names the job when there is no such record.
  absl::StatusOr<Record*> Find(const std::string& job_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the job is gone or a cancel was asked for.
  bool Cancelled(const std::string& job_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The coordinator is stopping: jobs that end now stay unfinished in the
  // store, and the next start on the same state requeues them from their
  // newest checkpoint (as after a crash), instead of ending CANCELLED.
  void SetStopping() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { stopping_ = true; }
  bool stopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; }
  // A new record for `job` (its id set); `persist`: written to the store.
  Record& Add(Job job, bool persist = true) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<Job> List() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job submitted with `request_id`, or "".
  std::string JobOfRequest(const std::string& request_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RememberRequest(const std::string& request_id, const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next job number when there is no store (the store numbers jobs
  // durably itself).
  int64_t NextJobNumber() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return next_job_++; }

  // The state machine: sets the state (and error), stamps a terminal
  // state's end and drops its data, writes through, recounts, notifies.
  void SetState(Record& record, JobState state, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records that the job went back to `from_step`.
  void AddRecovery(Record& record, const std::string& cause, int64_t from_step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the job to the store, if any (always when `force`, else at
  // most once a second per job); a failed write is logged, not fatal.
  void Persist(Record& record, bool force) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateCounts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets a job: its record, its metrics' series, its rows in the store,
  // its checkpoint and model files. The store's error, if any.
  absl::Status Forget(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets finished jobs (and their files) beyond max_retained_jobs.
  void ForgetOldJobs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Aborts every call of the job's running attempt with `reason`.
  void AbortClients(Record& record, const absl::Status& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Calls `watcher` now with the job, then after every change, until
  // Unwatch. The watcher runs under the registry's lock: it must not
  // block or call back.
  absl::StatusOr<int64_t> Watch(const std::string& job_id, Watcher watcher)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Unwatch(int64_t token) ABSL_LOCKS_EXCLUDED(mu_);

  // Every record, for the failover monitor and shutdown.
  std::map<std::string, std::unique_ptr<Record>>& records() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return jobs_;
  }

  // Where a succeeded job's model is kept under state_dir.
  std::string ModelDir(const std::string& job_id) const;
  const Options& options() const { return options_; }

 private:
  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Record>> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> request_ids_ ABSL_GUARDED_BY(mu_);
  std::multimap<std::string, std::pair<int64_t, Watcher>> watchers_ ABSL_GUARDED_BY(mu_);
  int64_t next_job_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_JOB_REGISTRY_H_
