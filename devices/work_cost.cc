#include "devices/work_cost.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/cost_util.h"
#include "devices/reram/reram_cost.h"
#include "devices/systolic/systolic_array.h"
#include "devices/vector_unit.h"

namespace hpt {
namespace {

GpuLaunch LaunchOf(GpuBaseline::Name baseline, const std::string& task_type) {
  if (baseline == GpuBaseline::graph || baseline == GpuBaseline::bf16) return GpuLaunch::kGraph;
  if (baseline == GpuBaseline::libtorch || task_type == "backward") return GpuLaunch::kEager;
  return GpuLaunch::kPythonEager;
}

// A recorded kernel's product shape (unknown where none was recorded).
GemmShape ShapeOf(const GpuKernelWork& k) {
  GemmShape s{k.m(), k.n(), k.k()};
  s.a_transposed = k.a_transposed();
  s.b_transposed = k.b_transposed();
  return s;
}

CostReport CostGpuWork(const TaskWork& work, const DeviceCostConfig& config,
                       GpuBaseline::Name baseline, const std::string& task_type) {
  const GpuLaunch launch = LaunchOf(baseline, task_type);
  const GpuPrecision precision =
      baseline == GpuBaseline::bf16 ? GpuPrecision::kBf16 : config.gpu_precision;
  const bool fused_update = work.optimizer_numel_size() > 0 &&
                            (baseline == GpuBaseline::fused || baseline == GpuBaseline::graph ||
                             baseline == GpuBaseline::bf16);
  const bool streamed = StreamsState(config.gpu, double(work.state_bytes()));
  const std::vector<int64_t> sizes(work.optimizer_numel().begin(),
                                   work.optimizer_numel().end());
  StreamedReads reads{streamed, streamed && task_type == "update"};
  // An update a parameter at a time reads each parameter's tensors from
  // memory once and runs its other passes from cache, while they fit it.
  double state_read_s = 0;
  if (reads.elementwise && !fused_update) {
    const std::optional<double> once = ParameterStateReadS(config.gpu, sizes);
    if (once.has_value()) {
      reads.elementwise = false;
      state_read_s = *once;
    }
  }
  // A fused update is one Python call whose launches LibTorch makes.
  GpuKernelTally tally(config.gpu, precision,
                       fused_update && launch == GpuLaunch::kPythonEager ? GpuLaunch::kEager
                                                                         : launch,
                       reads);
  double extra_s = state_read_s;
  if (fused_update) {
    // The update's arithmetic as recorded, its traffic and launches as a
    // fused multi-tensor Adam's, called once (from Python, where eager).
    double flops = 0, numel = 0;
    for (const GpuKernelWork& k : work.kernels()) flops += k.flops() * double(k.count());
    for (int64_t n : sizes) numel += double(n);
    for (double share : MultiTensorLaunchShares(sizes)) {
      tally.Add(flops * share, kFusedAdamBytesPerElement * numel * share);
    }
    if (launch == GpuLaunch::kPythonEager) extra_s += config.gpu.python_op_s;
  } else {
    for (const GpuKernelWork& k : work.kernels()) {
      tally.Add(k.flops(), k.bytes(), double(k.count()), KernelKindOf(k.op()), ShapeOf(k));
    }
  }
  // A graph replay costs one launch for the task's kernels; eager, the
  // program's kernel-less ops cost their dispatch on the host.
  if (launch == GpuLaunch::kGraph && tally.kernels() > 0) extra_s += config.gpu.dispatch_s;
  if (launch != GpuLaunch::kGraph) {
    tally.AddHostCalls({double(work.host_ops()), double(work.host_frames()),
                        double(work.history_ops()), double(work.autograd_nodes())});
  }
  const GpuStepCost s = tally.Finish(extra_s);
  CostReport c;
  c.set_device_kind(DeviceKind::gpu);
  c.set_simulated_s(s.time_s);
  c.set_energy_j(s.energy_j);
  auto& counters = *c.mutable_counters();
  counters["flops"] = s.flops;
  counters["dram_bytes"] = s.bytes;
  counters["kernels"] = double(s.kernels);
  counters["launch_bound_kernels"] = double(s.launch_bound_kernels);
  counters["launch_bound_s"] = s.launch_bound_s;
  return c;
}

void AddSystolic(const SystolicReport& r, double times, CostReport* total) {
  CostReport part;
  part.set_simulated_s(r.latency_s * times);
  part.set_energy_j(r.energy_j * times);
  auto& c = *part.mutable_counters();
  c["macs"] = double(r.macs) * times;
  c["cycles"] = double(r.total_cycles) * times;
  c["stall_cycles"] = double(r.stall_cycles) * times;
  c["sram_reads"] = double(r.sram_ifmap_reads + r.sram_filter_reads) * times;
  c["sram_writes"] = double(r.sram_ofmap_writes) * times;
  c["dram_words"] = double(r.dram_ifmap_reads + r.dram_filter_reads + r.dram_ofmap_writes) * times;
  c["util_weighted_cycles"] = r.overall_util_pct / 100.0 * double(r.total_cycles) * times;
  AddCost(part, total);
}

int64_t CopiesOf(const std::string& layer, int64_t recorded, const LayerCopies* copies) {
  if (copies == nullptr) return recorded;
  auto it = copies->find(layer);
  return it == copies->end() ? recorded : it->second;
}

CostReport CostNodeWork(const TaskWork& work, const DeviceCostConfig& config,
                        const LayerCopies* copies) {
  CostReport total;
  total.set_device_kind(config.kind);
  const bool reram = config.kind == DeviceKind::reram;
  // A ReRAM node's digital unit is costed as the array at the node's clock.
  SystolicConfig array = config.systolic;
  if (reram) array.clock_hz = config.reram.clock_hz;
  const double lanes = double(reram ? config.reram.crossbar_cols : config.systolic.cols);
  std::map<std::string, double> group_latency_s;  // longest read per group
  // Identical products recur (per head, per layer): simulate each once.
  std::map<std::tuple<int64_t, int64_t, int64_t>, SystolicReport> gemms;
  for (const WorkItem& item : work.items()) {
    switch (item.item_case()) {
      case WorkItem::kGemm: {
        const SystolicGemmWork& g = item.gemm();
        auto [it, fresh] = gemms.try_emplace({g.m(), g.n(), g.k()});
        if (fresh) it->second = SimulateGemm(array, {g.m(), g.n(), g.k()});
        AddSystolic(it->second, g.times(), &total);
        break;
      }
      case WorkItem::kReramRead: {
        const ReramReadWork& r = item.reram_read();
        const int64_t dup = CopiesOf(r.layer(), r.duplication(), copies);
        const ReramReadCost c =
            r.transposed() ? ReramLayerReadCost(config.reram, r.vectors(), r.n(), r.k(), dup)
                           : ReramLayerReadCost(config.reram, r.vectors(), r.k(), r.n(), dup);
        double latency_s = c.latency_s;
        if (!r.concurrent().empty()) {
          // Only what this read adds beyond the group's longest so far.
          double& longest = group_latency_s[r.concurrent()];
          latency_s = std::max(0.0, c.latency_s - longest);
          longest = std::max(longest, c.latency_s);
        }
        CostReport part;
        part.set_simulated_s(latency_s);
        part.set_energy_j(c.energy_j);
        auto& k = *part.mutable_counters();
        k["crossbar_activations"] = double(r.vectors()) * config.reram.input_bits *
                                    double(ReramCrossbars(config.reram, r.k(), r.n()));
        k["adc_conversions"] = double(c.adc_conversions);
        AddCost(part, &total);
        break;
      }
      case WorkItem::kReramProgram: {
        const ReramProgramWork& p = item.reram_program();
        const ReramWriteCost r = ReramProgramCost(
            config.reram, p.k(), p.n(), CopiesOf(p.layer(), p.duplication(), copies));
        CostReport part;
        part.set_simulated_s(r.latency_s);
        part.set_energy_j(r.energy_j);
        auto& k = *part.mutable_counters();
        k["cell_writes"] = double(r.cell_writes);
        k["max_cell_writes"] = double(p.max_cell_writes());
        k["worst_wear"] = p.worst_wear();
        AddCost(part, &total);
        break;
      }
      case WorkItem::kElementwise: {
        const double ops = item.elementwise().ops();
        const double clock = reram ? config.reram.clock_hz : config.systolic.clock_hz;
        const VectorUnitCost c = ElementwiseCost(lanes, clock, ops, config.elementwise_energy_j);
        CostReport part;
        part.set_simulated_s(c.latency_s);
        part.set_energy_j(c.energy_j);
        (*part.mutable_counters())["elementwise_ops"] = ops;
        AddCost(part, &total);
        break;
      }
      case WorkItem::ITEM_NOT_SET:
        break;
    }
  }
  return total;
}

}  // namespace

std::string GpuBaselineSource(GpuBaseline::Name baseline) {
  switch (baseline) {
    case GpuBaseline::libtorch:
      return "libtorch: the same eager kernels from LibTorch C++, as this service's GPU "
             "workers run them (dispatch per op from the profile; no Python layer)";
    case GpuBaseline::fused:
      return "fused: paper with PyTorch's fused Adam (ATen MultiTensorApply.cuh: 36 tensors "
             "or 320 chunks of 65,536 elements a launch; 28 B per element)";
    case GpuBaseline::graph:
      return "graph: fused, the whole step replayed as a CUDA graph (one launch per task; a "
             "node costs its kernel plus 0.5 us: NVIDIA, \"Getting Started with CUDA "
             "Graphs\", 2019)";
    case GpuBaseline::bf16:
      return "bf16: graph under bf16 autocast (products' work on the bf16 units, their "
             "latency as measured in fp32; layer norm in fp32)";
    default:
      return "paper: the paper's PyTorch code path: eager from Python, per-parameter Adam "
             "(dispatch per op, plus Python's layer on forward and update ops)";
  }
}

CostReport CostTaskWork(const TaskWork& work, const DeviceCostConfig& config,
                        GpuBaseline::Name baseline, const LayerCopies* copies,
                        const std::string& task_type) {
  if (config.kind == DeviceKind::gpu) return CostGpuWork(work, config, baseline, task_type);
  return CostNodeWork(work, config, copies);
}

void AddKernels(const std::vector<GpuKernel>& kernels, TaskWork* work) {
  std::map<std::tuple<std::string, double, double, GemmShape>, int> index;
  for (int i = 0; i < work->kernels_size(); ++i) {
    const GpuKernelWork& k = work->kernels(i);
    index[{k.op(), k.flops(), k.bytes(), ShapeOf(k)}] = i;
  }
  for (const GpuKernel& k : kernels) {
    work->set_host_frames(work->host_frames() + k.frames);
    work->set_history_ops(work->history_ops() + k.history);
    work->set_autograd_nodes(work->autograd_nodes() + k.nodes);
    if (LaunchesNoKernel(k.op)) {
      work->set_host_ops(work->host_ops() + 1);
      continue;
    }
    auto [it, fresh] =
        index.try_emplace({k.op, k.flops, k.bytes, k.shape}, work->kernels_size());
    if (fresh) {
      GpuKernelWork* w = work->add_kernels();
      w->set_op(k.op);
      w->set_flops(k.flops);
      w->set_bytes(k.bytes);
      w->set_m(k.shape.m);
      w->set_k(k.shape.k);
      w->set_n(k.shape.n);
      w->set_a_transposed(k.shape.a_transposed);
      w->set_b_transposed(k.shape.b_transposed);
    }
    GpuKernelWork* w = work->mutable_kernels(it->second);
    w->set_count(w->count() + 1);
  }
}

std::optional<double> ParameterStateReadS(const GpuSpec& gpu,
                                          const std::vector<int64_t>& numel) {
  if (numel.empty()) return std::nullopt;
  double s = 0;
  for (int64_t n : numel) {
    const double tensor_bytes = 4.0 * double(std::max<int64_t>(n, 0));
    if (gpu.cache_bytes > 0 && kAdamLiveTensors * tensor_bytes > gpu.cache_bytes) {
      return std::nullopt;
    }
    // A pass's operands: two tensors read and one written.
    const double pass_bytes = 3 * tensor_bytes;
    const double memory = MemoryRate(gpu, pass_bytes, /*streamed=*/true);
    const double cache = MemoryRate(gpu, pass_bytes, /*streamed=*/false, /*in_place=*/true);
    s += kFusedAdamBytesPerElement / 4.0 * tensor_bytes * std::max(0.0, 1 / memory - 1 / cache);
  }
  return s;
}

std::vector<double> MultiTensorLaunchShares(const std::vector<int64_t>& numel) {
  double total = 0;
  for (int64_t n : numel) total += double(std::max<int64_t>(n, 0));
  std::vector<double> shares;
  if (total <= 0) return shares;
  // PyTorch's multi_tensor_apply: tensors fill a launch's list, their
  // chunks its blocks; a full list, full blocks or the last chunk launch,
  // and a tensor cut by full blocks carries on into the next launch.
  int64_t tensors = 0, blocks = 0;
  double elements = 0;
  size_t last = numel.size();
  while (last > 0 && numel[last - 1] <= 0) --last;
  for (size_t t = 0; t < last; ++t) {
    if (numel[t] <= 0) continue;
    ++tensors;
    const int64_t chunks = (numel[t] + kMultiTensorChunk - 1) / kMultiTensorChunk;
    for (int64_t c = 0; c < chunks; ++c) {
      ++blocks;
      elements += double(std::min(kMultiTensorChunk, numel[t] - c * kMultiTensorChunk));
      const bool last_chunk = c == chunks - 1;
      const bool tensors_full = tensors == kMultiTensorMaxTensors && last_chunk;
      const bool blocks_full = blocks == kMultiTensorMaxBlocks;
      const bool very_last = t + 1 == last && last_chunk;
      if (tensors_full || blocks_full || very_last) {
        shares.push_back(elements / total);
        elements = 0;
        blocks = 0;
        tensors = last_chunk ? 0 : 1;
      }
    }
  }
  return shares;
}

}  // namespace hpt
