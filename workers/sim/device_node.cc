#include "workers/sim/device_node.h"

#include <algorithm>

#include "common/cost_util.h"
#include "devices/blas.h"
#include "devices/work_cost.h"

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
  cost->Gemm(n, k, m);
}

DeviceCostConfig DeviceNode::CostConfig() const {
  DeviceCostConfig c = DefaultDeviceCostConfig(kind);
  c.systolic = systolic;
  c.reram = reram;
  c.elementwise_energy_j = elementwise_energy_j;
  return c;
}

CostBuilder::CostBuilder(const DeviceNode& node) : node_(node) {}

void CostBuilder::Gemm(int64_t m, int64_t n, int64_t k, double times) {
  SystolicGemmWork* g = work_.add_items()->mutable_gemm();
  g->set_m(m);
  g->set_n(n);
  g->set_k(k);
  g->set_times(times);
}

void CostBuilder::ReramRead(const std::string& layer, const ReramLayer& crossbars,
                            int64_t vectors, bool transposed, const std::string& concurrent) {
  ReramReadWork* r = work_.add_items()->mutable_reram_read();
  r->set_layer(layer);
  r->set_k(crossbars.in_features());
  r->set_n(crossbars.out_features());
  r->set_vectors(vectors);
  r->set_transposed(transposed);
  r->set_duplication(crossbars.duplication());
  r->set_concurrent(concurrent);
}

void CostBuilder::ReramProgram(const std::string& layer, const ReramLayer& crossbars,
                               const ReramReport& programmed) {
  ReramProgramWork* p = work_.add_items()->mutable_reram_program();
  p->set_layer(layer);
  p->set_k(crossbars.in_features());
  p->set_n(crossbars.out_features());
  p->set_duplication(crossbars.duplication());
  p->set_max_cell_writes(programmed.max_cell_writes);
  p->set_worst_wear(programmed.worst_wear);
}

void CostBuilder::Elementwise(double ops) {
  work_.add_items()->mutable_elementwise()->set_ops(ops);
}

CostReport CostBuilder::Finish(Clock::time_point start) {
  DeviceCostConfig config = node_.CostConfig();
  CostReport report = CostTaskWork(work_, config);
  report.set_device_kind(node_.kind);
  report.set_measured_s(std::chrono::duration<double>(Clock::now() - start).count());
  work_.mutable_settings()->insert(node_.settings.begin(), node_.settings.end());
  *report.mutable_work() = std::move(work_);
  work_.Clear();
  return report;
}

}  // namespace hpt
