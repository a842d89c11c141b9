#include "workers/nccl_group.h"

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

}  // namespace hpt
