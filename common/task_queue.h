// TaskQueue: runs closures one at a time, in order, on its own thread. A
// worker's device executes its tasks this way, so gRPC's callback threads
// never block on computation.
//
//   TaskQueue queue("device");
//   queue.Post([reactor] { ...; reactor->Finish(status); });
#ifndef HPT_COMMON_TASK_QUEUE_H_
#define HPT_COMMON_TASK_QUEUE_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace hpt {

class TaskQueue {
 public:
  explicit TaskQueue(std::string name);
  // Runs the closures already posted, then joins the thread.
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  void Post(std::function<void()> task);
  size_t pending() const;

 private:
  void Loop();

  const std::string name_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace hpt

#endif  // HPT_COMMON_TASK_QUEUE_H_
