// The segment ops as a table (segment_graph.h runs them): one entry per
// SegmentOp type, holding its load-time check, its forward numerics and
// cost, and its backward. Numerics and costs are the node's
// (device_node.h); element-wise rows run devices/cpu_kernels.h.
//
//   segment_ops_linear.cc       LINEAR (crossbars on a ReRAM node), LORA
//   segment_ops_elementwise.cc  ADD, ADD_CONST, RELU, DROPOUT, LAYER_NORM,
//                               CONCAT
//   segment_ops_attention.cc    ATTENTION (score and context products)
//
// Internal to segment_graph.
#ifndef HPT_WORKERS_SEGMENT_OPS_H_
#define HPT_WORKERS_SEGMENT_OPS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "devices/reram/reram_layer.h"
#include "proto/worker_service.pb.h"
#include "workers/sim/device_node.h"

namespace hpt {

// One parameter resident on the node.
struct SegmentParam {
  std::vector<int64_t> shape;
  std::vector<float> value, grad, adam_m, adam_v;
  bool trainable = false;
  // Updates this parameter's Adam state has fewer than the job's (an
  // adapter added after the job's optimizer began: its own bias
  // correction counts from its first update).
  int64_t adam_lag = 0;
  // ReRAM nodes: a LINEAR weight's crossbars (holding W^T).
  std::unique_ptr<ReramLayer> crossbars;
};

// What an op sees when its segment loads.
struct OpLoad {
  const DeviceNode& node;
  const SegmentOp& op;
  const std::string& where;  // "segment 'name' op i", for errors
  // Moves parameter `name` from the request into the segment, checking
  // that it is `rank`-D.
  std::function<absl::StatusOr<SegmentParam*>(const std::string& name, bool trainable,
                                              size_t rank)>
      take;
  const std::map<std::string, HostTensor>& sent;  // what the request still holds
  CostBuilder* cost;                              // programming crossbars
};

// What an op's forward sees.
struct OpForward {
  const DeviceNode& node;
  const SegmentOp& op;
  int index;
  const std::string& where;  // "segment 'name' op i: ", for errors
  std::map<std::string, SegmentParam>& params;
  std::map<std::string, HostTensor>& values;  // every value so far
  HostTensor& x;                              // the op's first input
  // Whether the op may take x's buffer for its result (an inference
  // forward, and no later op reads x).
  bool may_take_x;
  uint64_t mask_seed;      // the forward's dropout seed
  std::vector<float>* aux;  // training: what the backward needs; else null
  CostBuilder* cost;

  bool train() const { return aux != nullptr; }
  // The result of an element-wise op, starting as its first input.
  HostTensor InputCopy() { return may_take_x ? std::move(x) : x; }
};

// What an op's backward sees.
struct OpBackward {
  const DeviceNode& node;
  const SegmentOp& op;
  int index;
  std::map<std::string, SegmentParam>& params;
  const std::map<std::string, HostTensor>& values;  // the training forward's
  const std::vector<float>* aux;                    // its op's aux, or null
  uint64_t mask_seed;
  HostTensor g;        // the gradient of the op's output
  const HostTensor& x;  // the op's first input
  // Adds a gradient of one of the op's inputs.
  std::function<void(const std::string& input, HostTensor grad)> accumulate;
  CostBuilder* cost;
};

struct SegmentOpKernel {
  absl::Status (*load)(OpLoad& load);
  absl::StatusOr<HostTensor> (*forward)(OpForward& forward);
  absl::Status (*backward)(OpBackward& backward);
};

// The entry of `type`; null for a type the table lacks.
const SegmentOpKernel* FindSegmentOp(SegmentOp::Type type);

// The table's entries (one per file above).
extern const SegmentOpKernel kLinearOp, kLoraOp, kAttentionOp, kAddOp, kAddConstOp, kReluOp,
    kDropoutOp, kLayerNormOp, kConcatOp;

// Helpers the entries share.
int64_t Cols(const HostTensor& t);  // the last dimension
int64_t Rows(const HostTensor& t);  // the elements over Cols
HostTensor WithLastDim(const HostTensor& like, int64_t last);
std::vector<float> Transpose(const float* a, int64_t rows, int64_t cols);
// The dropout seed of op `op` from the forward's seed.
uint64_t MixSeed(uint64_t seed, int op);
// Rows per parallel chunk of a row-wise op: about 16 Ki elements.
int64_t RowGrain(int64_t cols);
// An op that takes no parameters and checks nothing at load.
absl::Status NoLoad(OpLoad& load);

}  // namespace hpt

#endif  // HPT_WORKERS_SEGMENT_OPS_H_
