// WorkCost: the one path from a task's recorded work (proto/work.proto) to
// its cost. Workers cost their tasks with it as they run them; the
// coordinator re-costs recorded work with it under other settings
// (docs/cost-model.md, "Record once, cost many").
//
//   TaskWork work;                      // filled while the task ran
//   CostReport c = CostTaskWork(work, config);
//
// GPU baselines: how the same GPU work would launch.
//   paper   as recorded: LibTorch's eager kernels, its C++ Adam stepping
//           each parameter tensor with its own kernels (the paper's
//           PyTorch code ran eager, per-parameter Adam).
//   fused   the update as PyTorch's fused Adam (torch.optim.Adam
//           fused=True): one multi-tensor kernel per 36 tensors or 320
//           chunks of 65,536 elements (ATen MultiTensorApply.cuh,
//           depth_to_max_tensors[3] = 36, depth_to_max_blocks = 320,
//           kChunkSize = 65536), reading parameter, gradient and both
//           moments and writing three of them: 28 bytes per fp32 element.
//   graph   fused, and the step replayed as a CUDA graph: one launch per
//           task, then each kernel costs its work or a graph node's
//           overhead, whichever is more (kGraphNodeS).
#ifndef HPT_DEVICES_WORK_COST_H_
#define HPT_DEVICES_WORK_COST_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/cost_settings.h"
#include "devices/gpu/kernel_cost.h"
#include "proto/common.pb.h"
#include "proto/work.pb.h"

namespace hpt {

enum class GpuBaseline { kPaper, kFused, kGraph };

absl::StatusOr<GpuBaseline> ParseGpuBaseline(const std::string& name);
std::string GpuBaselineName(GpuBaseline baseline);
std::vector<GpuBaseline> AllGpuBaselines();
// Where each baseline's launch costs come from, in a sentence.
std::string GpuBaselineSource(GpuBaseline baseline);

// Per-kernel time on the GPU when a CUDA graph replays the step: NVIDIA's
// "Getting Started with CUDA Graphs" (A. Gray, NVIDIA Technical Blog,
// 2019) measures a 2.9 us kernel at 3.4 us per kernel replayed as a graph
// (3.8 us launched from a stream, 9.6 us with a sync after each): about
// 0.5 us of overhead per graph node.
inline constexpr double kGraphNodeS = 0.5e-6;
// Multi-tensor apply (ATen MultiTensorApply.cuh) for a depth-4 tensor list.
inline constexpr int64_t kMultiTensorMaxTensors = 36;
inline constexpr int64_t kMultiTensorMaxBlocks = 320;
inline constexpr int64_t kMultiTensorChunk = 65536;
// Bytes per element of a fused Adam step: reads p, g, m, v and writes p,
// m, v, fp32 each.
inline constexpr double kFusedAdamBytesPerElement = 28;

// Copies of frozen layers by weight name, where a re-plan changed them;
// reads and programming of layers not in it keep their recorded copies.
using LayerCopies = std::map<std::string, int64_t>;

// The task's cost on a device configured as `config`: simulated time,
// energy and counters (not measured_s, not the work).
CostReport CostTaskWork(const TaskWork& work, const DeviceCostConfig& config,
                        GpuBaseline baseline = GpuBaseline::kPaper,
                        const LayerCopies* copies = nullptr);

// Groups a task's kernels by (op, FLOPs, bytes), in first-launch order,
// leaving out ops that launch none.
void AddKernels(const std::vector<GpuKernel>& kernels, TaskWork* work);

// The launches of PyTorch's multi-tensor apply over tensors of these
// element counts, each as its share of the elements.
std::vector<double> MultiTensorLaunchShares(const std::vector<int64_t>& numel);

}  // namespace hpt

#endif  // HPT_DEVICES_WORK_COST_H_
