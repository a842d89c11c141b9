#include "workers/gpu/nccl_group.h"

#include <ATen/cuda/CUDAContext.h>

#include <cstdio>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace hpt {

c10::intrusive_ptr<c10d::Backend> MakeNcclGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    int device_index, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size,
                                                           options);
  // Binding the device lets NCCL make its communicator now rather than at
  // the first collective, so a bad peer shows up in JoinGroup.
  group->setBoundDeviceId(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index)));
  return group;
}

std::string CudaDeviceUuid(int device_index) {
  const cudaDeviceProp* props = at::cuda::getDeviceProperties(device_index);
  const auto* b = reinterpret_cast<const unsigned char*>(props->uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

}  // namespace hpt
