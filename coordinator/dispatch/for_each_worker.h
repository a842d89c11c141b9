// ForEachWorker: runs fn(i) for workers 0..n-1 at once and picks the error
// that explains the others.
#ifndef HPT_COORDINATOR_DISPATCH_FOR_EACH_WORKER_H_
#define HPT_COORDINATOR_DISPATCH_FOR_EACH_WORKER_H_

#include <future>
#include <vector>

#include "absl/status/status.h"

namespace hpt {

// Returns the first error, or rather the first worker's that is gone: the
// others' errors (a collective whose peer vanished) follow from it.
template <typename Fn>
absl::Status ForEachWorker(size_t n, Fn fn) {
  if (n == 1) return fn(0);
  std::vector<std::future<absl::Status>> futures;
  for (size_t i = 0; i < n; ++i) {
    futures.push_back(std::async(std::launch::async, fn, i));
  }
  absl::Status first, gone, late;
  for (auto& f : futures) {
    absl::Status s = f.get();
    if (first.ok() && !s.ok()) first = s;
    if (gone.ok() && absl::IsUnavailable(s)) gone = s;
    if (late.ok() && absl::IsDeadlineExceeded(s)) late = s;
  }
  return !gone.ok() ? gone : !late.ok() ? late : first;
}

}  // namespace hpt

#endif  // HPT_COORDINATOR_DISPATCH_FOR_EACH_WORKER_H_
