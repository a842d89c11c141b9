// Timing and facts of a CUDA device without CUDA in the header: its L2
// cache, the replay cost of a CUDA graph of tiny kernels (what one graph
// node costs at the least), and the device time of any body's kernels
// replayed as a graph, timed with CUDA events. Only the .cc
// sees the CUDA headers; on a machine without CUDA the call says so.
//
//   ASSIGN_OR_RETURN(double node_s, CudaGraphNodeS(0));
#ifndef HPT_WORKERS_CUDA_TIMING_H_
#define HPT_WORKERS_CUDA_TIMING_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"

namespace at::cuda {
struct CUDAGraph;
}  // namespace at::cuda

namespace hpt {

// Captures what `body` launches on the current stream into `graph`. Where
// an op breaks the capture off, the capture is ended all the same, so that
// the stream captures no more and later work runs, and the op's error is
// rethrown.
void CaptureGraph(at::cuda::CUDAGraph& graph, const std::function<void()>& body);

// The nodes of a captured graph, all of them and the kernels among them
// (not memsets, copies or events), read through the CUDA runtime that
// LibTorch loaded. `graph` must have been made with keep_graph (its
// cudaGraph_t is otherwise gone after capture). An error where the runtime
// does not export the calls or refuses them.
struct GraphNodeCount {
  int64_t nodes = 0, kernels = 0;
};
absl::StatusOr<GraphNodeCount> CountGraphNodes(at::cuda::CUDAGraph& graph);

// Seconds per node when a CUDA graph of `nodes` one-element adds replays
// on device `device_index` (the median of `replays`).
absl::StatusOr<double> CudaGraphNodeS(int device_index, int nodes = 1000, int replays = 20);

// The least over `runs` replays of a CUDA graph holding what `body`
// launches on device `device_index`, seconds by CUDA events: the kernels'
// own device time, without the host's launches. `body` runs once first,
// uncaptured (cuBLAS's workspace, gradients' buffers), on the capturing
// stream. An error where the body cannot be captured (it synchronises, or
// copies to the host).
absl::StatusOr<double> CudaGraphBestS(int device_index, int runs,
                                      const std::function<void()>& body);

// How many CudaGraphBestS calls failed to capture in this process.
int CudaGraphCaptureFailures();

// The device's L2 cache, bytes (its last-level cache), as CUDA reports it.
absl::StatusOr<double> CudaL2CacheBytes(int device_index);

}  // namespace hpt

#endif  // HPT_WORKERS_CUDA_TIMING_H_
