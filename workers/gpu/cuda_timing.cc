#include "workers/gpu/cuda_timing.h"

#include <ATen/cuda/CUDAContextLight.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace hpt {

namespace {

// Through c10's device-generic events (libc10_cuda), not the CUDA runtime's
// inline calls: this binary links no cudart of its own. BACKEND_DEFAULT
// events keep timing.
c10::Event TimingEvent() {
  return c10::Event(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
}

std::atomic<int> capture_failures{0};

}  // namespace

void CaptureGraph(at::cuda::CUDAGraph& graph, const std::function<void()>& body) {
  graph.capture_begin();
  try {
    body();
  } catch (const c10::Error&) {
    try {
      graph.capture_end();  // throws for the broken capture, which the op's error says
    } catch (const c10::Error&) {
    }
    throw;
  }
  graph.capture_end();
}

absl::StatusOr<double> CudaGraphBestS(int device_index, int runs,
                                      const std::function<void()>& body) {
  if (!torch::cuda::is_available()) return absl::FailedPreconditionError("no CUDA device");
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device_index);
  c10::StreamGuard guard(stream);
  double best = std::numeric_limits<double>::infinity();
  try {
    body();  // uncaptured first: what the first call allocates or sets up
    torch::cuda::synchronize(device_index);
    at::cuda::CUDAGraph graph;
    CaptureGraph(graph, body);
    for (int r = 0; r <= runs; ++r) {
      c10::Event start = TimingEvent(), stop = TimingEvent();
      start.record(stream);
      graph.replay();
      stop.record(stream);
      stop.synchronize();
      if (r > 0) best = std::min(best, 1e-3 * start.elapsedTime(stop));
    }
  } catch (const c10::Error& e) {
    ++capture_failures;
    torch::cuda::synchronize(device_index);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot capture as a CUDA graph: ", e.what_without_backtrace()));
  }
  return best;
}

int CudaGraphCaptureFailures() { return capture_failures.load(); }

absl::StatusOr<double> CudaGraphNodeS(int device_index, int nodes, int replays) {
  if (!torch::cuda::is_available()) return absl::FailedPreconditionError("no CUDA device");
  const torch::Device device(torch::kCUDA, device_index);
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::ones({1}, device);
  // Capture runs on a side stream (the default stream cannot capture).
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device_index);
  at::cuda::CUDAGraph graph;
  {
    c10::StreamGuard guard(stream);
    x.add_(1);  // warm the kernel outside the capture
    torch::cuda::synchronize(device_index);
    graph.capture_begin();
    for (int i = 0; i < nodes; ++i) x.add_(1);
    graph.capture_end();
  }
  std::vector<double> per_node;
  for (int r = 0; r < replays + 1; ++r) {
    c10::StreamGuard guard(stream);
    c10::Event start = TimingEvent(), stop = TimingEvent();
    start.record(stream);
    graph.replay();
    stop.record(stream);
    stop.synchronize();
    if (r > 0) per_node.push_back(1e-3 * start.elapsedTime(stop) / nodes);
  }
  std::nth_element(per_node.begin(), per_node.begin() + per_node.size() / 2, per_node.end());
  return per_node[per_node.size() / 2];
}

absl::StatusOr<double> CudaL2CacheBytes(int device_index) {
  if (!torch::cuda::is_available()) return absl::FailedPreconditionError("no CUDA device");
  return double(at::cuda::getDeviceProperties(device_index)->l2CacheSize);
}

}  // namespace hpt
