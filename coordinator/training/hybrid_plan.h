// HybridPlan: the LoRA phase of the spatio-temporal transformer as a chain
// of segments on simulated-device workers (docs/method.md, the paper's mapping).
//
// The model is written out as ops over named values (SegmentOp), each op is
// placed on a device kind by the placement, and consecutive ops on the same
// worker form one segment:
//   paper      frozen linear layers (the base weights) on ReRAM: forward
//              x W^T and backward g W are crossbar reads. LoRA adapters,
//              modules_to_save, attention score and context products
//              (activation x activation), LayerNorm, residuals, ReLU and
//              dropout on systolic arrays.
//   reram_full a what-if: as paper, but the base weights train too, so
//              every update rewrites their crossbars.
// With several workers of a kind, layer i goes to worker i mod n.
//
// A layer becomes eight segments (four ReRAM: q/k/v, o, ff1, ff2; four
// systolic), so a step is a few dozen calls, not hundreds.
//
//   ASSIGN_OR_RETURN(HybridPlan plan, PlanHybrid(model, lora, ranks, options));
#ifndef HPT_COORDINATOR_TRAINING_HYBRID_PLAN_H_
#define HPT_COORDINATOR_TRAINING_HYBRID_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "devices/reram/reram_chip.h"
#include "proto/job_service.pb.h"
#include "proto/worker_service.pb.h"

namespace hpt {

struct PlannedSegment {
  DeviceKind::Name kind = DeviceKind::DEVICE_KIND_UNSPECIFIED;  // reram or systolic
  int worker = 0;    // index among the workers of that kind
  SegmentSpec spec;  // named inputs and outputs
  // Parameters the segment holds (names as in the GPU model's snapshot,
  // plus the "token_encoding" constant).
  std::vector<std::string> params;
};

// A frozen layer's placement on a ReRAM chip, for the job report.
struct ReramPlacement {
  std::string layer;  // "layers.0.self_attn.q_proj"
  int worker = 0;
  int64_t in_features = 0, out_features = 0;
  int64_t duplication = 1;
  int64_t tiles = 0;  // tiles of all its copies
};

struct HybridPlan {
  std::string input = "x";              // [batch, tokens, input_features]
  std::string prediction = "prediction";  // output of the last segment
  std::vector<PlannedSegment> segments;
  std::vector<ReramPlacement> reram_layers;
  // Per ReRAM worker: the frozen layers' demands the copies were planned
  // for (weight names, shapes, vectors a step; 0 vectors: one copy).
  std::vector<std::vector<ReramLayerDemand>> chip_demands;
};

struct HybridPlanOptions {
  Placement::Name placement = Placement::paper;  // paper or reram_full
  int reram_workers = 1;
  int systolic_workers = 1;
  uint64_t seed = 0;  // dropout masks
  // Weight duplication: each ReRAM worker is a chip of `chip` tiles; the
  // frozen layers placed on it get copies (SegmentOp.duplication) chosen by
  // PlanDuplication for `vectors_per_step` input vectors (batch x tokens)
  // read forward and backward. 0: one copy each. reram_full keeps one copy,
  // since every update would rewrite every copy.
  int64_t vectors_per_step = 0;
  // The full phase with some encoder layers switched (hpt.switch_rule
  // layerwise): the layers that still train in full. Their weights and
  // norms, the embedding, reduction and head train on the systolic arrays;
  // only the switched layers' frozen weights go to ReRAM. Empty: the LoRA
  // phase, every layer switched.
  std::vector<int> full_layers;
  ReramChipConfig chip;
  ReramConfig reram;
};


// `lora` is normalised (models/lora.h LoraDefaults); `ranks` maps each
// adapter ("layers.0.self_attn.q_proj") to its rank.
absl::StatusOr<HybridPlan> PlanHybrid(const ModelConfig& model, const LoraConfig& lora,
                                      const std::map<std::string, int>& ranks,
                                      const HybridPlanOptions& options);

// The output head (dimension reduction, ReLU, head) as one segment, for a
// head placed on a ReRAM or systolic worker in the full phase; its linear
// layers train unless `trainable` is false (frozen weights in ReRAM).
SegmentSpec HeadSegment(bool trainable);

// The frozen layers' places on the chips, as the job reports them.
void DescribeReramLayers(const HybridPlan& plan, HptStatus* hpt);

// Between the two forms of a LoRA-phase model: the device segments take a
// token-encoding constant the GPU model computes (added when missing), and
// keep the ReRAM layers' read state (dropped for the GPU, with the
// constant).
void AddTokenEncoding(int64_t tokens, int64_t d_model,
                      std::map<std::string, HostTensor>* params);
std::map<std::string, HostTensor> GpuModelTensors(std::map<std::string, HostTensor> params);

// The sinusoidal token encoding the model adds after the embedding, the
// same values as models/st_transformer.h TokenEncoding: [tokens, d_model].
HostTensor TokenEncodingTable(int64_t tokens, int64_t d_model);

// Moves the tensors whose names end with `suffix` out of `tensors`.
std::map<std::string, HostTensor> TakeSuffixed(const std::string& suffix,
                                               std::map<std::string, HostTensor>* tensors);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_HYBRID_PLAN_H_
