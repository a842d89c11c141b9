// JobRegistry: the coordinator's jobs as records: each job's Job message
// (its state machine QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED),
// its loaded data, its newest checkpoint in memory, its trained model and
// the workers of its running attempt. It notifies watchers of every
// change, writes jobs through to the durable store (job_store.h), keeps the
// job-count metrics, and forgets the oldest finished jobs past a limit.
//
// The registry owns its lock. A change to a job is one transaction: the
// function given to Update runs on the job's record under the lock, and
// what it may do there (set the state, persist, notify) is on Locked:
//
//   RETURN_IF_ERROR(registry.Update(job_id, [&](JobRegistry::Locked& r) {
//     r.SetState(RUNNING, "");
//     return absl::OkStatus();
//   }));
//
// Thread-safe.
#ifndef HPT_COORDINATOR_JOBS_JOB_REGISTRY_H_
#define HPT_COORDINATOR_JOBS_JOB_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
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

// What a user's cancel aborts a job's worker calls with; a call it cut
// ends with these words after its own.
inline constexpr char kCancelledByRequest[] = "cancelled by request";

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
    // When the job's progress was last set while it ran (InfinitePast: not
    // since its state last changed). A copy of a running job counts its
    // elapsed time to the moment of reading, not to its last step's end.
    absl::Time progress_at = absl::InfinitePast();
  };

  struct Options {
    CoordinatorMetrics* metrics = nullptr;  // optional
    JobStore* store = nullptr;              // null: jobs live in memory only
    std::string state_dir;                  // checkpoint and model files; may be empty
    int max_retained_jobs = 100;            // finished jobs beyond this are forgotten
    std::function<absl::Time()> now;        // the clock; null: absl::Now
  };

  // One job's record while an Update holds the registry's lock: what the
  // update reads and changes. Valid only inside that update.
  class Locked {
   public:
    Record& record() { return record_; }
    Job& job() { return record_.job; }
    // The state machine: sets the state (and error), stamps a terminal
    // state's end and drops its data, writes through, recounts, notifies.
    void SetState(JobState state, const std::string& error);
    // The trainer's latest progress, read at this moment.
    void SetProgress(const JobProgress& progress);
    // Records that the job went back to `from_step`.
    void AddRecovery(const std::string& cause, int64_t from_step);
    void Notify();
    // Writes the job to the store, if any (always when `force`, else at
    // most once a second); a failed write is logged, not fatal.
    void Persist(bool force);
    // Aborts every call of the job's running attempt with `reason`.
    void AbortClients(const absl::Status& reason);
    // The coordinator is stopping (JobRegistry::SetStopping).
    bool stopping() const;

   private:
    friend class JobRegistry;
    Locked(JobRegistry& registry, Record& record) : registry_(registry), record_(record) {}
    JobRegistry& registry_;
    Record& record_;
    bool ended_ = false;  // SetState gave it a terminal state
  };

  explicit JobRegistry(Options options) : options_(std::move(options)) {}

  static bool IsTerminal(JobState state);

  // Runs `fn` on the job's record under the registry's lock and returns
  // what it returns; NOT_FOUND naming the job when there is no record.
  // `fn` must not block or call back into the registry. When it ends a job,
  // finished jobs past max_retained_jobs are forgotten after it.
  absl::Status Update(const std::string& job_id, absl::FunctionRef<absl::Status(Locked&)> fn)
      ABSL_LOCKS_EXCLUDED(mu_);
  // `fn` on every record, in job-id order, under one hold of the lock.
  void UpdateAll(absl::FunctionRef<void(Locked&)> fn) ABSL_LOCKS_EXCLUDED(mu_);
  // A new record for `job` (its id set), submitted with `request_id`
  // (empty: none); `persist`: written to the store.
  void Add(Job job, const std::string& request_id, bool persist) ABSL_LOCKS_EXCLUDED(mu_);

  // A copy of the job as of now (a running job's elapsed time counts to
  // this moment); NOT_FOUND naming it when there is no record.
  absl::StatusOr<Job> Get(const std::string& job_id) const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<Job> List() const ABSL_LOCKS_EXCLUDED(mu_);
  // The job submitted with `request_id`, if any.
  std::optional<Job> JobOfRequest(const std::string& request_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the job is gone or a cancel was asked for.
  bool Cancelled(const std::string& job_id) const ABSL_LOCKS_EXCLUDED(mu_);
  // The next job number when there is no store (the store numbers jobs
  // durably itself).
  int64_t NextJobNumber() ABSL_LOCKS_EXCLUDED(mu_);
  // The coordinator is stopping: jobs that end now stay unfinished in the
  // store, and the next start on the same state requeues them from their
  // newest checkpoint (as after a crash), instead of ending CANCELLED.
  void SetStopping() ABSL_LOCKS_EXCLUDED(mu_);
  // Counts the jobs by state into the metrics (after a bulk change).
  void Recount() ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets a job once `check` allows it: its record, its metrics' series,
  // its rows in the store, its checkpoint and model files. `check`'s error,
  // or the store's.
  absl::Status Forget(const std::string& job_id,
                      absl::FunctionRef<absl::Status(const Record&)> check)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Calls `watcher` now with the job, then after every change, until
  // Unwatch. The watcher runs under the registry's lock: it must not
  // block or call back.
  absl::StatusOr<int64_t> Watch(const std::string& job_id, Watcher watcher)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Unwatch(int64_t token) ABSL_LOCKS_EXCLUDED(mu_);

  // Where a succeeded job's model is kept under state_dir.
  std::string ModelDir(const std::string& job_id) const;
  const Options& options() const { return options_; }

 private:
  absl::StatusOr<Record*> Find(const std::string& job_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time Now() const;
  // Seconds a running job has run since its progress was last set; 0 for
  // a job not running.
  double SinceProgress(const Record& record) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Job Current(const Record& record) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Persist(Record& record, bool force) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateCounts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ForgetLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForgetOldJobs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

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
