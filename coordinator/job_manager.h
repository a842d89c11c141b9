// JobManager: the coordinator's job registry and scheduler. Validates and
// accepts jobs (loading their data up front, so a bad spec or CSV is
// rejected at submit time with INVALID_ARGUMENT), keeps each job's state
// machine (QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED), runs queued
// jobs one at a time on a scheduler thread, and notifies watchers.
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
    DataLimits data_limits;       // what a job's data files may be
    // The durable registry (--state_dir); null: jobs live in memory only.
    // At construction every stored job comes back: finished ones as they
    // were, queued ones re-queued, and ones that were running re-queued
    // from step 0 (there are no checkpoints yet).
    JobStore* store = nullptr;
  };

  JobManager(Options options, WorkerPool* pool);
  ~JobManager();  // cancels running work and joins the scheduler

  absl::StatusOr<Job> Submit(const SubmitJobRequest& request);
  absl::StatusOr<Job> Get(const std::string& job_id) const;
  std::vector<Job> List() const;
  absl::StatusOr<Job> Cancel(const std::string& job_id);
  // The trained model of a succeeded job (LoRA merged).
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
  };

  void SchedulerLoop();
  void RunJob(const std::string& job_id);
  void SetState(Record& record, JobState state, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateCounts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the job to the store, if any (always when `force`, else at
  // most once a second per job); a failed write is logged, not fatal.
  void Persist(Record& record, bool force) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Recover() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForgetOldJobs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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
  int64_t next_token_ = 1 ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread scheduler_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOB_MANAGER_H_
