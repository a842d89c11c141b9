// What needs the CUDA and NCCL headers (from the nvidia-* wheels) and
// USE_C10D_NCCL, kept in this one translation unit: the NCCL backend of a
// data-parallel group whose tensors live on a CUDA device, and a CUDA
// device's identity.
#ifndef HPT_WORKERS_NCCL_GROUP_H_
#define HPT_WORKERS_NCCL_GROUP_H_

#include <chrono>
#include <string>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace hpt {

// A ProcessGroupNCCL of `size` ranks bound to CUDA device `device_index`,
// rendezvousing through `store`; collectives fail after `timeout`. Throws
// c10::Error as c10d does (the caller's guard turns it into a status).
c10::intrusive_ptr<c10d::Backend> MakeNcclGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    int device_index, std::chrono::milliseconds timeout);

// CUDA device `device_index`'s UUID as nvidia-smi and NVML write it
// ("GPU-8f3c..."), the same for every process on that physical GPU
// whatever CUDA_VISIBLE_DEVICES numbers it. Throws c10::Error without CUDA.
std::string CudaDeviceUuid(int device_index);

}  // namespace hpt

#endif  // HPT_WORKERS_NCCL_GROUP_H_
