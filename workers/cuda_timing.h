// Timing on a CUDA device without CUDA in the header: events around a
// task on the current stream, and the replay cost of a CUDA graph of tiny
// kernels (what one graph node costs at the least). Only the .cc sees the
// CUDA headers; on a build or a machine without CUDA each call says so.
//
//   CudaEventTimer timer(device_index);   // records its start event
//   ... the task's ops ...
//   double task_s = timer.ElapsedS();     // waits for the stop event
#ifndef HPT_WORKERS_CUDA_TIMING_H_
#define HPT_WORKERS_CUDA_TIMING_H_

#include <memory>

#include "absl/status/statusor.h"

namespace hpt {

class CudaEventTimer {
 public:
  explicit CudaEventTimer(int device_index);
  ~CudaEventTimer();
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;
  // Device time from construction to now on the current stream; waits for
  // the work before it.
  double ElapsedS();

 private:
  struct Events;
  std::unique_ptr<Events> events_;
};

// Seconds per node when a CUDA graph of `nodes` one-element adds replays
// on device `device_index` (the median of `replays`).
absl::StatusOr<double> CudaGraphNodeS(int device_index, int nodes = 1000, int replays = 20);

}  // namespace hpt

#endif  // HPT_WORKERS_CUDA_TIMING_H_
