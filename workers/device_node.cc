#include "workers/device_node.h"

#include <algorithm>

#include "common/cost_util.h"
#include "devices/blas.h"

namespace hpt {

using Clock = std::chrono::steady_clock;

// Products with the node's numerics: the systolic array's (fp32 or bf16
// operands), or fp32 on a ReRAM node's digital unit.
void NodeGemm(const DeviceNode& node, const float* a, const float* b, int64_t m,
          int64_t n, int64_t k, float* out) {
  if (node.is_reram()) {
    Sgemm(m, n, k, 1.0f, a, k, b, n, 0.0f, out, n);
  } else {
    SystolicGemm(node.systolic, a, b, m, n, k, out);
  }
}
void NodeGemmBt(const DeviceNode& node, const float* a, const float* b, int64_t m,
            int64_t n, int64_t k, float* out) {
  if (node.is_reram()) {
    SgemmBt(m, n, k, 1.0f, a, k, b, k, 0.0f, out, n);
  } else {
    SystolicGemmBt(node.systolic, a, b, m, n, k, out);
  }
}
// `n` values as the node's products take them: a systolic array's operand
// (bf16-rounded in bf16 mode), or the values themselves on a ReRAM node's
// digital unit.
const float* NodeOperand(const DeviceNode& node, const float* data, int64_t n,
                     std::vector<float>* storage) {
  return node.is_reram() ? data : SystolicOperand(node.systolic, data, n, storage);
}

// Cost of `times` products [m x k] x [k x n] on the array (a ReRAM node's
// digital unit is costed as the same array at the node's clock).
void NodeGemmCost(const DeviceNode& node, CostBuilder* cost, int64_t m, int64_t n,
              int64_t k, double times) {
  SystolicConfig config = node.systolic;
  if (node.is_reram()) config.clock_hz = node.reram.clock_hz;
  cost->Systolic(SimulateGemm(config, {m, n, k}), times);
}

// Weight gradient: acc[n x k] += g[m x n]^T x[m x k], accumulated by the
// product itself (g read transposed in place, no copy).
void NodeAddWeightGrad(const DeviceNode& node, CostBuilder* cost, const float* g,
                   const float* x, int64_t m, int64_t n, int64_t k,
                   std::vector<float>& acc) {
  std::vector<float> gs, xs;
  const float* ga = NodeOperand(node, g, m * n, &gs);
  const float* xa = NodeOperand(node, x, m * k, &xs);
  const float beta = acc.empty() ? 0.0f : 1.0f;
  acc.resize(n * k);
  SgemmAt(n, k, m, 1.0f, ga, n, xa, k, beta, acc.data(), k);
  NodeGemmCost(node, cost, n, k, m);
}

CostBuilder::CostBuilder(const std::string& kind) { report_.set_device_kind(kind); }

void CostBuilder::Systolic(const SystolicReport& r, double times) {
  CostReport part;
  part.set_simulated_s(r.latency_s * times);
  part.set_energy_j(r.energy_j * times);
  auto& c = *part.mutable_counters();
  c["macs"] = double(r.macs) * times;
  c["cycles"] = double(r.total_cycles) * times;
  c["stall_cycles"] = double(r.stall_cycles) * times;
  c["sram_reads"] = double(r.sram_ifmap_reads + r.sram_filter_reads) * times;
  c["sram_writes"] = double(r.sram_ofmap_writes) * times;
  c["dram_words"] =
      double(r.dram_ifmap_reads + r.dram_filter_reads + r.dram_ofmap_writes) * times;
  c["util_weighted_cycles"] =
      r.overall_util_pct / 100.0 * double(r.total_cycles) * times;
  AddCost(part, &report_);
}

void CostBuilder::Reram(const ReramReport& r, const std::string& concurrent) {
  CostReport part;
  double latency_s = r.latency_s;
  if (!concurrent.empty()) {
    // Only what this read adds beyond the group's longest so far.
    double& longest = group_latency_s_[concurrent];
    latency_s = std::max(0.0, r.latency_s - longest);
    longest = std::max(longest, r.latency_s);
  }
  part.set_simulated_s(latency_s);
  part.set_energy_j(r.energy_j);
  auto& c = *part.mutable_counters();
  c["crossbar_activations"] = double(r.crossbar_activations);
  c["adc_conversions"] = double(r.adc_conversions);
  c["cell_writes"] = double(r.cell_writes);
  c["max_cell_writes"] = double(r.max_cell_writes);
  c["worst_wear"] = r.worst_wear;
  AddCost(part, &report_);
}

void CostBuilder::Elementwise(const DeviceNode& node, double ops) {
  CostReport part;
  const VectorUnitCost c =
      ElementwiseCost(node.lanes(), node.clock_hz(), ops, node.elementwise_energy_j);
  part.set_simulated_s(c.latency_s);
  part.set_energy_j(c.energy_j);
  (*part.mutable_counters())["elementwise_ops"] = ops;
  AddCost(part, &report_);
}

CostReport CostBuilder::Finish(Clock::time_point start) {
  report_.set_measured_s(std::chrono::duration<double>(Clock::now() - start).count());
  return report_;
}

}  // namespace hpt
