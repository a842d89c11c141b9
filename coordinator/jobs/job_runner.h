// JobRunner: owns a running job's attempts. An attempt acquires workers
// from the pool (the GPU workers, an output head's worker, the LoRA
// phase's ReRAM and systolic workers), wires a Trainer to the registry
// (progress, checkpoints), trains, keeps the trained model (on disk with a
// state directory) and releases the workers.
//
// Failover: when a step fails because a worker is gone (UNAVAILABLE, a
// deadline, an abort, or a worker that lost the job), the job goes back to
// its newest checkpoint on the workers live then (a live worker of the same
// kind, or a data-parallel group shrunk to the GPU workers left) and
// replays the steps since, up to max_failovers times in a row without a
// step of progress between them; each is a Recovery in
// the job's history. A monitor thread aborts the calls of running jobs to
// workers the pool no longer counts live, four times a second, so a
// stopped worker's calls do not wait for their deadline.
//
//   JobRunner runner(options, &registry, &pool);
//   runner.Run("job-000001");  // on the scheduler's thread, to the job's end
//
// Thread-safe: Run may be called for several jobs at once.
#ifndef HPT_COORDINATOR_JOBS_JOB_RUNNER_H_
#define HPT_COORDINATOR_JOBS_JOB_RUNNER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/dispatch/worker_client.h"
#include "coordinator/dispatch/worker_pool.h"
#include "coordinator/jobs/job_registry.h"
#include "coordinator/training/checkpoint.h"
#include "coordinator/training/trainer.h"

namespace hpt {

class RendezvousStore;

class JobRunner {
 public:
  using ClientFactory = std::function<std::unique_ptr<WorkerClient>(const std::string& address,
                                                                    DeviceKind::Name kind)>;
  struct Options {
    ClientFactory client_factory;
    // The c10d store data-parallel jobs rendezvous at (started on the
    // first call); unset: data-parallel jobs fail with a clear error.
    std::function<absl::StatusOr<RendezvousStore*>()> rendezvous;
    // How long a job waits for the workers it needs (the coordinator's
    // --worker_wait_s, whose default is this one).
    absl::Duration worker_wait = absl::Seconds(60);
    std::string state_dir;  // checkpoint and model files; may be empty
    int max_failovers = 3;  // in a row, without progress between them
  };

  // `registry` and `pool` must outlive the runner.
  JobRunner(Options options, JobRegistry* registry, WorkerPool* pool);
  ~JobRunner();  // stops the monitor

  // Trains the queued job `job_id` to its end (SUCCEEDED, FAILED or
  // CANCELLED), failing over as above.
  void Run(const std::string& job_id);

  // The newest checkpoint of the job in memory or on disk (null: none).
  std::shared_ptr<const Checkpoint> LatestCheckpoint(const std::string& job_id);

  const Options& options() const { return options_; }

 private:
  // The workers of one attempt, by role.
  struct Workers {
    std::vector<WorkerEntry> entries;
    std::vector<std::unique_ptr<WorkerClient>> clients;
    std::vector<WorkerClient*> gpu, reram, systolic;
    std::vector<std::string> gpu_devices;  // each GPU worker's device id
    WorkerClient* head = nullptr;
  };

  // How an attempt ended.
  struct AttemptEnd {
    absl::Status status;
    bool trained = false;   // the trainer ran (the workers were there)
    bool returned = false;  // it left the fallback: the planned devices are back
    int64_t reached_step = -1;  // the furthest step it finished; -1: none
  };
  // One attempt: acquires workers (`failover`: as many GPU workers as are
  // live, at least one), trains from `resume` (null: from the start), and
  // releases them.
  AttemptEnd Attempt(const std::string& job_id, const JobSpec& spec, const WindowDataset* data,
                     std::shared_ptr<const Checkpoint> resume, bool failover);
  // Waits for the workers the job's placement needs. The LoRA phase's
  // devices are waited for hpt.device_wait_s; without them the job goes on
  // with hpt.fallback_placement gpu (`fallback_reason` says why) or fails.
  absl::StatusOr<std::vector<WorkerEntry>> AcquireWorkers(const std::string& job_id,
                                                          const JobSpec& spec, bool failover,
                                                          const std::function<bool()>& cancelled,
                                                          std::string* fallback_reason);
  // Waits up to `wait` for `count` live workers of `kind`; while fewer are
  // live, the job's waiting_for says "WHAT, up to WAIT, then THEN" from
  // the start (so status and hpt_job_waiting_for_workers show it at once).
  absl::StatusOr<std::vector<WorkerEntry>> WaitForKind(const std::string& job_id,
                                                       DeviceKind::Name kind, int count,
                                                       absl::Duration wait, const std::string& what,
                                                       const std::string& then,
                                                       const std::function<bool()>& cancelled);
  // Clients for `entries`, recorded in the job's record; `devices`: the
  // ReRAM and systolic workers serve the LoRA phase.
  Workers Connect(const std::string& job_id, std::vector<WorkerEntry> entries, bool devices,
                  bool failover);
  // The trainer's callbacks into the registry.
  // `cancelled` is the attempt's; the furthest step reported goes to
  // `reached_step`.
  void Wire(const std::string& job_id, const TrainingSpec& training,
            std::function<bool()> cancelled, int64_t* reached_step, Trainer::Options* options);
  // Keeps a succeeded job's model (and writes it under state_dir).
  void KeepTrainedModel(const std::string& job_id, const JobSpec& spec,
                        const TrainedModel& model);
  // Ends the job's record after its last attempt ended with `status`.
  void End(const std::string& job_id, const absl::Status& status, JobRegistry::Locked& r);
  void MonitorLoop();

  const Options options_;
  JobRegistry* const registry_;
  WorkerPool* const pool_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread monitor_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_JOB_RUNNER_H_
