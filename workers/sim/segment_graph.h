// SegmentGraph: one segment of a model as a simulated device node runs it.
// A segment is a small dataflow graph of ops over named values
// (proto/worker_service.proto, SegmentOp): linear layers, LoRA adapters,
// residual adds, LayerNorm, multi-head attention products, ReLU and
// dropout. Forward and backward are written out by hand over float buffers
// (no LibTorch), with the node's numerics and a cost for every piece
// (device_node.h). Each op type is one entry of a table (segment_ops.h);
// the graph checks the dataflow, keeps the values, and runs the entries
// forward and, for a backward, in reverse.
//
//   ASSIGN_OR_RETURN(auto graph, SegmentGraph::Create(node, spec, params, &cost));
//   SegmentGraph::Saved saved;
//   ASSIGN_OR_RETURN(auto outputs, graph->Forward(inputs, mask_seed, &cost, &saved));
//   ASSIGN_OR_RETURN(auto grads, graph->Backward(saved, grad_outputs, &cost));
//
// Not thread-safe.
#ifndef HPT_WORKERS_SEGMENT_GRAPH_H_
#define HPT_WORKERS_SEGMENT_GRAPH_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "proto/worker_service.pb.h"
#include "workers/sim/device_node.h"
#include "workers/sim/segment_ops.h"

namespace hpt {

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
