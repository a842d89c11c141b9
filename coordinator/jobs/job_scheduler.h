// JobScheduler: runs queued jobs in submission order, up to a number at
// once, each on a thread of its own (so a job waiting for workers holds up
// no other), and joins those threads as they finish.
//
//   JobScheduler scheduler(4, [&](const std::string& id) { runner.Run(id); });
//   scheduler.Enqueue("job-000001");
//   ...
//   scheduler.Stop();  // waits for every running job
//
// Thread-safe.
#ifndef HPT_COORDINATOR_JOBS_JOB_SCHEDULER_H_
#define HPT_COORDINATOR_JOBS_JOB_SCHEDULER_H_

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace hpt {

class JobScheduler {
 public:
  using RunFn = std::function<void(const std::string& job_id)>;

  // `run` trains one job to its end; at most `max_running` run at once.
  JobScheduler(int max_running, RunFn run);
  ~JobScheduler();  // Stop()

  void Enqueue(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes a job off the queue; false when it was not queued.
  bool Remove(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts no more jobs and joins the running ones (whoever asked them to
  // stop). Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop();

  const int max_running_;
  const RunFn run_;
  absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, std::thread> runners_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> finished_runners_ ABSL_GUARDED_BY(mu_);
  int64_t next_runner_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread loop_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_JOB_SCHEDULER_H_
