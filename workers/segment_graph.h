// SegmentGraph: one segment of a model as a simulated device node runs it.
// A segment is a small dataflow graph of ops over named values
// (proto/worker_service.proto, SegmentOp): linear layers, LoRA adapters,
// residual adds, LayerNorm, multi-head attention products, ReLU and
// dropout. Forward and backward are written out by hand over float buffers
// (no LibTorch), with the node's numerics and a cost for every piece:
//
//   ReRAM node: LINEAR weights live in crossbars, programmed once at load
//   (every cell write counted); the forward is a crossbar read x W^T and the
//   input gradient a transposed read g W. Any other product (a weight
//   gradient in the reram_full what-if, an adapter placed here) runs on the
//   node's digital unit, costed as a systolic array at the node's clock.
//   Systolic node: every product on the array (fp32, or bf16 operands with
//   fp32 accumulation), costed with SCALE-Sim's model.
//   Both: element-wise work (bias, residual, LayerNorm, softmax, ReLU,
//   dropout, loss, optimizer) on a vector unit, one operation per lane per
//   cycle, lanes = array columns (ReRAM: crossbar columns).
//
//   ASSIGN_OR_RETURN(auto graph, SegmentGraph::Create(node, spec, params, &cost));
//   SegmentGraph::Saved saved;
//   ASSIGN_OR_RETURN(auto outputs, graph->Forward(inputs, mask_seed, &cost, &saved));
//   ASSIGN_OR_RETURN(auto grads, graph->Backward(saved, grad_outputs, &cost));
//
// Not thread-safe.
#ifndef HPT_WORKERS_SEGMENT_GRAPH_H_
#define HPT_WORKERS_SEGMENT_GRAPH_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "devices/reram/reram_layer.h"
#include "devices/systolic/systolic_array.h"
#include "devices/vector_unit.h"
#include "proto/worker_service.pb.h"

namespace hpt {

// The node a segment runs on.
struct DeviceNode {
  std::string kind = "systolic";  // "systolic" or "reram"
  SystolicConfig systolic;
  ReramConfig reram;
  double elementwise_energy_j = kElementwiseOpEnergyJ;  // devices/vector_unit.h

  bool is_reram() const { return kind == "reram"; }
  double lanes() const {
    return double(is_reram() ? reram.crossbar_cols : systolic.cols);
  }
  double clock_hz() const { return is_reram() ? reram.clock_hz : systolic.clock_hz; }
};

// The cost of one task, assembled from its parts.
class CostBuilder {
 public:
  explicit CostBuilder(const std::string& kind);

  // `times` identical GEMMs (e.g. one per attention head and sample).
  void Systolic(const SystolicReport& r, double times = 1);
  // A ReRAM read or programming. Reads in one `concurrent` group (e.g. q,
  // k and v reading the same input from tiles of their own) overlap: the
  // group takes as long as its longest read. "" : in sequence.
  void Reram(const ReramReport& r, const std::string& concurrent = "");
  void Elementwise(const DeviceNode& node, double ops);
  CostReport Finish(std::chrono::steady_clock::time_point start);

 private:
  CostReport report_;
  std::map<std::string, double> group_latency_s_;  // longest read per group
};

// One parameter resident on the node.
struct SegmentParam {
  std::vector<int64_t> shape;
  std::vector<float> value, grad, adam_m, adam_v;
  bool trainable = false;
  // ReRAM nodes: a LINEAR weight's crossbars (holding W^T).
  std::unique_ptr<ReramLayer> crossbars;
};

class SegmentGraph {
 public:
  // What a training forward keeps for its backward.
  struct Saved {
    std::map<std::string, HostTensor> values;       // every value of the forward
    std::map<int, std::vector<float>> aux;          // per op (statistics, probabilities)
    uint64_t mask_seed = 0;                         // the forward's dropout seed
  };

  // Validates `spec` against the parameters (moved out of `params`) and, on
  // a ReRAM node, programs every LINEAR weight into crossbars (cost added).
  static absl::StatusOr<std::unique_ptr<SegmentGraph>> Create(
      const DeviceNode& node, const SegmentSpec& spec,
      std::map<std::string, HostTensor>& params, CostBuilder* cost);

  // Runs the ops. `saved` non-null: a training forward (dropout on, values
  // kept). `mask_seed` seeds the dropout masks.
  absl::StatusOr<std::map<std::string, HostTensor>> Forward(
      std::map<std::string, HostTensor> inputs, uint64_t mask_seed,
      CostBuilder* cost, Saved* saved);

  // Gradients of the segment's inputs given those of its outputs (missing
  // ones are zero). Adds the trainable parameters' gradients to their
  // accumulators.
  absl::StatusOr<std::map<std::string, HostTensor>> Backward(
      const Saved& saved, std::map<std::string, HostTensor> grad_outputs,
      CostBuilder* cost);

  // Programs the trainable LINEAR weights of a ReRAM node again (after an
  // update), paying the writes.
  absl::Status Reprogram(CostBuilder* cost);

  const std::string& name() const { return spec_.name(); }
  uint64_t seed() const { return spec_.seed(); }
  // Chain form: one unnamed input and output (proto/worker_service.proto).
  bool chain() const { return chain_; }
  const std::vector<std::string>& inputs() const { return inputs_; }
  const std::vector<std::string>& outputs() const { return outputs_; }
  std::map<std::string, SegmentParam>& params() { return params_; }
  const std::map<std::string, SegmentParam>& params() const { return params_; }
  int64_t num_parameters() const;

 private:
  SegmentGraph(const DeviceNode& node, SegmentSpec spec);
  absl::Status Compile(std::map<std::string, HostTensor>& params, CostBuilder* cost);

  DeviceNode node_;
  SegmentSpec spec_;  // names filled in
  bool chain_ = false;
  std::vector<std::string> inputs_, outputs_;
  std::map<std::string, SegmentParam> params_;
  // Per op: whether it is the last reader of its first input (no later op
  // reads it, no other input of the op is it, and it is not an output), so
  // an inference forward may take that buffer for the op's result.
  std::vector<bool> last_reader_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_SEGMENT_GRAPH_H_
