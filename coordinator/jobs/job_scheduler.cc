#include "coordinator/jobs/job_scheduler.h"

#include <algorithm>

namespace hpt {

JobScheduler::JobScheduler(int max_running, RunFn run)
    : max_running_(std::max(1, max_running)), run_(std::move(run)) {
  loop_ = std::thread([this] { Loop(); });
}

JobScheduler::~JobScheduler() { Stop(); }

void JobScheduler::Enqueue(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(job_id);
}

bool JobScheduler::Remove(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = std::find(queue_.begin(), queue_.end(), job_id);
  if (it == queue_.end()) return false;
  queue_.erase(it);
  return true;
}

void JobScheduler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (loop_.joinable()) loop_.join();
}

void JobScheduler::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(
        +[](JobScheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
          return s->stopping_ || !s->finished_runners_.empty() ||
                 (!s->queue_.empty() && s->running_ < s->max_running_);
        },
        this));
    // Join the runners that are done.
    for (int64_t id : finished_runners_) {
      std::thread t = std::move(runners_[id]);
      runners_.erase(id);
      mu_.Unlock();
      t.join();
      mu_.Lock();
    }
    finished_runners_.clear();
    if (stopping_) break;
    if (queue_.empty() || running_ >= max_running_) continue;
    const std::string job_id = queue_.front();
    queue_.pop_front();
    ++running_;
    const int64_t id = next_runner_++;
    runners_[id] = std::thread([this, job_id, id] {
      run_(job_id);
      absl::MutexLock done(&mu_);
      --running_;
      finished_runners_.push_back(id);
    });
  }
  // Stopping: whoever stopped us asked every running job to end; wait.
  std::map<int64_t, std::thread> left = std::move(runners_);
  mu_.Unlock();
  for (auto& [id, t] : left) t.join();
  mu_.Lock();
}

}  // namespace hpt
