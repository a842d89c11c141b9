// KernelRecorder: the ATen ops LibTorch runs on the calling thread (and on
// autograd's, which inherit its thread-local callbacks) while it lives,
// as the kernels they launch on a GPU, with their FLOPs and bytes. A
// matrix product is one GEMM kernel, however CPU LibTorch carries it out
// (what it calls is not counted); any other op that calls kernel-launching ops is not a kernel itself, its
// callees are; views launch nothing. Collectives (Gloo,
// NCCL) are left out: the cost timeline models the allreduce.
//
//   KernelRecorder recorder;
//   loss.backward();
//   std::vector<GpuKernel> kernels = recorder.Finish();
//
// One recorder per thread at a time; not copyable. LibTorch stays in the
// .cc file.
#ifndef HPT_WORKERS_KERNEL_RECORDER_H_
#define HPT_WORKERS_KERNEL_RECORDER_H_

#include <cstdint>
#include <vector>

#include "devices/gpu/kernel_cost.h"

namespace hpt {

class KernelRecorder {
 public:
  KernelRecorder();
  ~KernelRecorder();
  KernelRecorder(const KernelRecorder&) = delete;
  KernelRecorder& operator=(const KernelRecorder&) = delete;

  // Stops recording and returns the kernels in launch order.
  std::vector<GpuKernel> Finish();

 private:
  uint64_t handle_ = 0;
  bool active_ = false;
};

}  // namespace hpt

#endif  // HPT_WORKERS_KERNEL_RECORDER_H_
