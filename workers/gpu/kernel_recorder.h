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
#include <map>
#include <memory>
#include <string>
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

// A job's recorded kernels by task shape. A step's ops, and so its
// kernels, follow from its shapes, not its values, so each shape is
// recorded twice (the first task may differ: Adam creates its moments on
// its first step) and the second list serves every later task of that
// shape. Recording hooks every ATen op (a RecordFunction callback that
// copies its input shapes), which on a GPU costs as much as a small kernel.
// Not thread-safe: the executor's mutex guards it with the job.
//
//   std::unique_ptr<KernelRecorder> recorder = memo.Begin(key);
//   ... the task's ops ...
//   std::vector<GpuKernel> kernels = memo.End(key, std::move(recorder));
class KernelMemo {
 public:
  // A recorder for a task of shape `key`, or null where that shape's
  // kernels are known.
  std::unique_ptr<KernelRecorder> Begin(const std::string& key) const;
  // The task's kernels: `recorder`'s, remembered for `key`, or (null) the
  // remembered ones; valid until the next End of `key`.
  const std::vector<GpuKernel>& End(const std::string& key,
                                    std::unique_ptr<KernelRecorder> recorder);
  // Tasks of `key` recorded so far (at most 2).
  int recorded(const std::string& key) const;

 private:
  struct Shape {
    int recorded = 0;
    std::vector<GpuKernel> kernels;
  };
  std::map<std::string, Shape> shapes_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_KERNEL_RECORDER_H_
