// WorkCost: the one path from a task's recorded work (proto/work.proto) to
// its cost. Workers cost their tasks with it as they run them; the
// coordinator re-costs recorded work with it under other settings
// (docs/cost-model.md, "Record once, cost many").
//
//   TaskWork work;                      // filled while the task ran
//   CostReport c = CostTaskWork(work, config);
//
// GPU baselines: how the same GPU work would run (the profile's launch
// path: devices/gpu/kernel_cost.h).
//   paper     the paper's own code: PyTorch from Python, eager, Adam
//             stepping each parameter tensor with its own kernels. The
//             forward and the update are Python calls (python_op_s an op,
//             views included); autograd runs the backward in C++.
//   libtorch  the same kernels from LibTorch C++, as this service's GPU
//             workers run them (no Python layer).
//   fused     paper, with the update as PyTorch's fused Adam
//             (torch.optim.Adam fused=True): one multi-tensor kernel per 36
//             tensors or 320 chunks of 65,536 elements (ATen
//             MultiTensorApply.cuh, depth_to_max_tensors[3] = 36,
//             depth_to_max_blocks = 320, kChunkSize = 65536), reading
//             parameter, gradient and both moments and writing three of
//             them: 28 bytes per fp32 element; one Python call.
//   graph     fused, the whole step captured as one CUDA graph: one launch
//             per task, each kernel its device time plus a graph node's.
//   bf16      graph, under bf16 autocast: products' work on the bf16
//             units, their latency as the fp32 tables measured it
//             (GemmRate); the way a tuned GPU user trains today.
#ifndef HPT_DEVICES_WORK_COST_H_
#define HPT_DEVICES_WORK_COST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/gpu_baseline.h"
#include "devices/cost_settings.h"
#include "devices/gpu/kernel_cost.h"
#include "proto/common.pb.h"
#include "proto/work.pb.h"

namespace hpt {

// Where each baseline's launch costs come from, in a sentence.
std::string GpuBaselineSource(GpuBaseline::Name baseline);

// Multi-tensor apply (ATen MultiTensorApply.cuh) for a depth-4 tensor list.
inline constexpr int64_t kMultiTensorMaxTensors = 36;
inline constexpr int64_t kMultiTensorMaxBlocks = 320;
inline constexpr int64_t kMultiTensorChunk = 65536;
// Bytes per element of a fused Adam step: reads p, g, m, v and writes p,
// m, v, fp32 each.
inline constexpr double kFusedAdamBytesPerElement = 28;
// Tensors a parameter's Adam step holds at once: the parameter, its
// gradient, the two moments and two temporaries (the second moment's root
// and the denominator).
inline constexpr double kAdamLiveTensors = 6;

// An update a parameter at a time (eager Adam, an op per pass over each
// parameter's tensors) on a device whose cache the model's state outgrows:
// the time its parameters' tensors take to come from memory once each
// (read p, g, m, v; p, m, v written back: kFusedAdamBytesPerElement)
// beyond the cached rate its passes are rated at. nullopt where one
// parameter's live tensors (kAdamLiveTensors) outgrow the cache: then
// every pass streams.
std::optional<double> ParameterStateReadS(const GpuSpec& gpu, const std::vector<int64_t>& numel);

// Copies of frozen layers by weight name, where a re-plan changed them;
// reads and programming of layers not in it keep their recorded copies.
using LayerCopies = std::map<std::string, int64_t>;

// The task's cost on a device configured as `config`: simulated time,
// energy and counters (not measured_s, not the work). `task_type`
// (forward, backward, update) says which GPU ops a Python program calls
// itself: the forward's and the update's.
CostReport CostTaskWork(const TaskWork& work, const DeviceCostConfig& config,
                        GpuBaseline::Name baseline = GpuBaseline::paper,
                        const LayerCopies* copies = nullptr,
                        const std::string& task_type = "forward");

// Groups a task's kernels by (op, FLOPs, bytes, shape), in first-launch order,
// leaving out ops that launch none.
void AddKernels(const std::vector<GpuKernel>& kernels, TaskWork* work);

// The launches of PyTorch's multi-tensor apply over tensors of these
// element counts, each as its share of the elements.
std::vector<double> MultiTensorLaunchShares(const std::vector<int64_t>& numel);

}  // namespace hpt

#endif  // HPT_DEVICES_WORK_COST_H_
