#include "workers/gpu/cuda_timing.h"

#include <ATen/cuda/CUDAContextLight.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>
#include <driver_types.h>
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

// A CUDA runtime call from the runtime already in the process (LibTorch's,
// or one a CUDA library loaded): this binary links none of its own.
void* RuntimeSymbol(const char* name) {
  if (void* f = dlsym(RTLD_DEFAULT, name)) return f;
  for (const char* lib : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    if (void* handle = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD)) {
      void* f = dlsym(handle, name);
      dlclose(handle);
      if (f != nullptr) return f;
    }
  }
  return nullptr;
}

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

absl::StatusOr<GraphNodeCount> CountGraphNodes(at::cuda::CUDAGraph& graph) {
  using GetNodes = cudaError_t (*)(cudaGraph_t, cudaGraphNode_t*, size_t*);
  using GetType = cudaError_t (*)(cudaGraphNode_t, cudaGraphNodeType*);
  auto get_nodes = reinterpret_cast<GetNodes>(RuntimeSymbol("cudaGraphGetNodes"));
  auto get_type = reinterpret_cast<GetType>(RuntimeSymbol("cudaGraphNodeGetType"));
  if (get_nodes == nullptr || get_type == nullptr) {
    return absl::UnavailableError("the CUDA runtime in this process exports no cudaGraphGetNodes");
  }
  cudaGraph_t raw = graph.raw_cuda_graph();
  size_t n = 0;
  if (get_nodes(raw, nullptr, &n) != cudaSuccess) {
    return absl::InternalError("cudaGraphGetNodes refused the captured graph");
  }
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0 && get_nodes(raw, nodes.data(), &n) != cudaSuccess) {
    return absl::InternalError("cudaGraphGetNodes refused the captured graph");
  }
  GraphNodeCount count;
  count.nodes = int64_t(n);
  for (size_t i = 0; i < n; ++i) {
    cudaGraphNodeType type;
    if (get_type(nodes[i], &type) != cudaSuccess) {
      return absl::InternalError("cudaGraphNodeGetType refused a node of the captured graph");
    }
    if (type == cudaGraphNodeTypeKernel) ++count.kernels;
  }
  return count;
}

absl::StatusOr<double> CudaL2CacheBytes(int device_index) {
  if (!torch::cuda::is_available()) return absl::FailedPreconditionError("no CUDA device");
  return double(at::cuda::getDeviceProperties(device_index)->l2CacheSize);
}

}  // namespace hpt
