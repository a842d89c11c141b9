#include "common/task_queue.h"

namespace hpt {

TaskQueue::TaskQueue(std::string name)
    : name_(std::move(name)), thread_([this] { Loop(); }) {}

TaskQueue::~TaskQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void TaskQueue::Post(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

size_t TaskQueue::pending() const {
  absl::MutexLock lock(&mu_);
  return tasks_.size();
}

void TaskQueue::Loop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](TaskQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) {
            return q->stopping_ || !q->tasks_.empty();
          },
          this));
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace hpt
