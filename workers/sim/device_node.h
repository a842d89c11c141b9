// A simulated device node as a segment runs on it (segment_graph.h): its
// kind and configs, the products it computes with its own numerics, and
// the cost of each piece of work, assembled into a task's CostReport.
//
//   ReRAM node     LINEAR weights in crossbars (devices/reram/); any other
//                  product on the node's digital unit, costed as a systolic
//                  array at the node's clock.
//   systolic node  every product on the array (fp32, or bf16 operands with
//                  fp32 accumulation), costed with SCALE-Sim's model
//                  (devices/systolic/).
//   both           element-wise work on a vector unit, one operation per
//                  lane per cycle, lanes = array columns (ReRAM: crossbar
//                  columns) (devices/vector_unit.h).
//
//   CostBuilder cost(node);
//   NodeGemmBt(node, x, w, m, n, k, y);
//   cost.Gemm(m, n, k);
//   CostReport report = cost.Finish(start);
//
// The builder records the work (proto/work.proto) and costs it with the
// one path from work to cost (devices/work_cost.h), so the coordinator can
// re-cost it under other settings.
//
// Not thread-safe.
#ifndef HPT_WORKERS_DEVICE_NODE_H_
#define HPT_WORKERS_DEVICE_NODE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "devices/cost_settings.h"
#include "devices/reram/reram_layer.h"
#include "devices/systolic/systolic_array.h"
#include "devices/vector_unit.h"
#include "proto/common.pb.h"
#include "proto/work.pb.h"

namespace hpt {

// The node a segment runs on.
struct DeviceNode {
  DeviceKind::Name kind = DeviceKind::systolic;  // or reram
  SystolicConfig systolic;
  ReramConfig reram;
  double elementwise_energy_j = kElementwiseOpEnergyJ;  // devices/vector_unit.h
  // The node's cost settings (devices/cost_settings.h), sent with its tasks'
  // work; set by SetCostSettings from the configs above.
  std::map<std::string, std::string> settings;

  DeviceCostConfig CostConfig() const;
  void SetCostSettings() { settings = DeviceSettingsOf(CostConfig()); }

  bool is_reram() const { return kind == DeviceKind::reram; }
  double lanes() const {
    return double(is_reram() ? reram.crossbar_cols : systolic.cols);
  }
  double clock_hz() const { return is_reram() ? reram.clock_hz : systolic.clock_hz; }
};

// One task's work, and at the end its cost.
class CostBuilder {
 public:
  explicit CostBuilder(const DeviceNode& node);

  // `times` identical GEMMs (e.g. one per attention head and sample) on the
  // node's array (a ReRAM node's digital unit).
  void Gemm(int64_t m, int64_t n, int64_t k, double times = 1);
  // A read of the crossbars holding weight `layer`. Reads in one
  // `concurrent` group (e.g. q, k and v reading the same input from tiles
  // of their own) overlap: the group takes as long as its longest read.
  // "" : in sequence.
  void ReramRead(const std::string& layer, const ReramLayer& crossbars, int64_t vectors,
                 bool transposed, const std::string& concurrent = "");
  // Programming weight `layer` into its crossbars (`programmed`: the
  // layer's report, for the wear it left).
  void ReramProgram(const std::string& layer, const ReramLayer& crossbars,
                    const ReramReport& programmed);
  // Element-wise operations on the node's vector unit.
  void Elementwise(double ops);
  // The work and its cost, with the time since `start` as measured_s.
  CostReport Finish(std::chrono::steady_clock::time_point start);

 private:
  const DeviceNode& node_;
  TaskWork work_;
};

// Products with the node's numerics: the systolic array's (fp32 or bf16
// operands), or fp32 on a ReRAM node's digital unit. Row-major;
// out[m x n] = a[m x k] b[k x n], or with NodeGemmBt b stored [n x k].
void NodeGemm(const DeviceNode& node, const float* a, const float* b, int64_t m, int64_t n,
              int64_t k, float* out);
void NodeGemmBt(const DeviceNode& node, const float* a, const float* b, int64_t m, int64_t n,
                int64_t k, float* out);
// `n` values as the node's products take them: a systolic array's operand
// (bf16-rounded in bf16 mode), or the values themselves on a ReRAM node's
// digital unit.
const float* NodeOperand(const DeviceNode& node, const float* data, int64_t n,
                         std::vector<float>* storage);
// Weight gradient: acc[n x k] += g[m x n]^T x[m x k], accumulated by the
// product itself (g read transposed in place, no copy), and its cost.
void NodeAddWeightGrad(const DeviceNode& node, CostBuilder* cost, const float* g, const float* x,
                       int64_t m, int64_t n, int64_t k, std::vector<float>& acc);

}  // namespace hpt

#endif  // HPT_WORKERS_DEVICE_NODE_H_
