#include "coordinator/training/hybrid_plan.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/device_kind.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "models/model_config.h"

namespace hpt {
namespace {

struct PlacedOp {
  DeviceKind::Name kind = DeviceKind::DEVICE_KIND_UNSPECIFIED;
  int worker = 0;
  SegmentOp op;
  int64_t in_features = 0, out_features = 0;  // LINEAR
};

class OpList {
 public:
  OpList(const LoraConfig& lora, const HybridPlanOptions& options)
      : lora_(lora), options_(options) {}

  // Under the full phase with some layers switched every module outside
  // those layers trains, as on the GPU (models/lora.h ApplyLora).
  bool Saved(const std::string& module) const {
    if (!options_.full_layers.empty()) return true;
    return std::find(lora_.modules_to_save().begin(), lora_.modules_to_save().end(),
                     module) != lora_.modules_to_save().end();
  }

  // A linear layer: frozen base weights go to ReRAM, trained ones to the
  // systolic array; reram_full trains the layers' base weights in ReRAM.
  void Linear(const std::string& prefix, const std::string& in, const std::string& out,
              bool trainable, int layer, int64_t in_features, int64_t out_features) {
    SegmentOp op;
    op.set_type(SegmentOp::LINEAR);
    op.set_weight(prefix + ".weight");
    op.set_bias(prefix + ".bias");
    op.add_inputs(in);
    op.set_output(out);
    DeviceKind::Name kind = DeviceKind::systolic;
    if (!trainable) {
      kind = DeviceKind::reram;
      if (options_.placement == Placement::reram_full && layer >= 0) op.set_trainable(true);
    } else {
      op.set_trainable(true);
    }
    Add(kind, layer, std::move(op));
    ops.back().in_features = in_features;
    ops.back().out_features = out_features;
  }

  bool TrainsInFull(int layer) const {
    return std::find(options_.full_layers.begin(), options_.full_layers.end(), layer) !=
           options_.full_layers.end();
  }

  void Systolic(int layer, SegmentOp::Type type, std::vector<std::string> in,
                const std::string& out, const std::function<void(SegmentOp&)>& more = {}) {
    SegmentOp op;
    op.set_type(type);
    for (std::string& name : in) op.add_inputs(std::move(name));
    op.set_output(out);
    if (more) more(op);
    Add(DeviceKind::systolic, layer, std::move(op));
  }

  void Add(DeviceKind::Name kind, int layer, SegmentOp op) {
    const int n = kind == DeviceKind::reram ? options_.reram_workers : options_.systolic_workers;
    ops.push_back({kind, std::max(layer, 0) % std::max(n, 1), std::move(op)});
  }

  std::vector<PlacedOp> ops;

 private:
  const LoraConfig& lora_;
  const HybridPlanOptions& options_;
};

std::vector<std::string> ParamsOf(const SegmentOp& op) {
  std::vector<std::string> names;
  for (const std::string* s : {&op.weight(), &op.bias(), &op.weight_b()}) {
    if (!s->empty()) names.push_back(*s);
  }
  return names;
}

}  // namespace

HostTensor TokenEncodingTable(int64_t tokens, int64_t d_model) {
  HostTensor enc({tokens, d_model});
  const float step = static_cast<float>(-std::log(10000.0) / double(d_model));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < d_model; i += 2) {
      const float div = std::exp(float(i) * step);
      const float angle = float(t) * div;
      enc.data[t * d_model + i] = std::sin(angle);
      if (i + 1 < d_model) enc.data[t * d_model + i + 1] = std::cos(angle);
    }
  }
  return enc;
}

namespace {

std::function<void(SegmentOp&)> WithDropout(double p) {
  return [p](SegmentOp& op) { op.set_dropout(p); };
}

// One layer's LoRA on `target`'s projection of `in` (already listed as
// "<v><target>.base"), where the job adapts that target: dropout, the
// adapter and the sum. Returns the value the projection ends as.
absl::StatusOr<std::string> Adapt(const std::string& target, const std::string& in, int layer,
                                  const LoraConfig& lora, const std::map<std::string, int>& ranks,
                                  OpList* list) {
  const std::string p = absl::StrCat("layers.", layer, ".");
  const std::string v = absl::StrCat("L", layer, ".");
  const std::string base = v + target + ".base";
  if (std::find(lora.targets().begin(), lora.targets().end(), target) == lora.targets().end()) {
    return base;
  }
  auto rank = ranks.find(p + "self_attn." + target);
  if (rank == ranks.end() || rank->second < 1) {
    return absl::InvalidArgumentError(absl::StrCat("no LoRA rank for ", p, "self_attn.", target));
  }
  const std::string adapter = p + "self_attn.lora_" + target;
  list->Systolic(layer, SegmentOp::DROPOUT, {in}, v + target + ".in", WithDropout(lora.dropout()));
  list->Systolic(layer, SegmentOp::LORA, {v + target + ".in"}, v + target + ".delta",
                 [&](SegmentOp& op) {
                   op.set_weight(adapter + ".A.weight");
                   op.set_weight_b(adapter + ".B.weight");
                   op.set_scale(lora.alpha() / double(rank->second));
                   op.set_trainable(true);
                 });
  list->Systolic(layer, SegmentOp::ADD, {base, v + target + ".delta"}, v + target);
  return v + target;
}

// Encoder layer `i` as ops, from value h<i> to h<i+1>: the base
// projections (one ReRAM segment), adapters, attention, feed-forward and
// the norms, as the model computes them (models/st_transformer.cc).
// A layer that still trains in full (HybridPlanOptions::full_layers) has
// no adapters: its linear layers and norms train on the systolic arrays.
absl::Status ListLayer(int i, const ModelConfig& model, const LoraConfig& lora,
                       const std::map<std::string, int>& ranks, OpList* list) {
  const std::string p = absl::StrCat("layers.", i, ".");
  const std::string h = absl::StrCat("h", i), v = absl::StrCat("L", i, ".");
  const int64_t d = model.d_model();
  const int64_t ff = int64_t(model.ff_multiplier()) * d;
  const double dropout = model.dropout();
  const bool full = list->TrainsInFull(i);
  auto adapt = [&](const std::string& target,
                   const std::string& in) -> absl::StatusOr<std::string> {
    if (full) return v + target + ".base";
    return Adapt(target, in, i, lora, ranks, list);
  };
  auto norm = [&](const std::string& name) {
    return [&, name](SegmentOp& op) {
      op.set_weight(p + name + ".weight");
      op.set_bias(p + name + ".bias");
      op.set_trainable(full);
    };
  };
  for (const char* target : {"q_proj", "k_proj", "v_proj"}) {
    list->Linear(p + "self_attn." + target, h, v + target + ".base", full, i, d, d);
  }
  std::map<std::string, std::string> projected;
  for (const char* target : {"q_proj", "k_proj", "v_proj"}) {
    ASSIGN_OR_RETURN(projected[target], adapt(target, h));
  }
  // Attention without dropout on its weights, dropout on its context.
  list->Systolic(i, SegmentOp::ATTENTION,
                 {projected["q_proj"], projected["k_proj"], projected["v_proj"]},
                 v + "attention", [&](SegmentOp& op) { op.set_num_heads(model.num_heads()); });
  list->Systolic(i, SegmentOp::DROPOUT, {v + "attention"}, v + "context", WithDropout(dropout));
  list->Linear(p + "self_attn.o_proj", v + "context", v + "o_proj.base", full, i, d, d);
  ASSIGN_OR_RETURN(projected["o_proj"], adapt("o_proj", v + "context"));
  list->Systolic(i, SegmentOp::DROPOUT, {projected["o_proj"]}, v + "attn", WithDropout(dropout));
  list->Systolic(i, SegmentOp::ADD, {h, v + "attn"}, v + "res1");
  list->Systolic(i, SegmentOp::LAYER_NORM, {v + "res1"}, v + "norm1", norm("norm1"));
  list->Linear(p + "ff1", v + "norm1", v + "ff1", full, i, d, ff);
  list->Systolic(i, SegmentOp::RELU, {v + "ff1"}, v + "relu");
  list->Systolic(i, SegmentOp::DROPOUT, {v + "relu"}, v + "relu.drop", WithDropout(dropout));
  list->Linear(p + "ff2", v + "relu.drop", v + "ff2", full, i, ff, d);
  list->Systolic(i, SegmentOp::DROPOUT, {v + "ff2"}, v + "ff2.drop", WithDropout(dropout));
  list->Systolic(i, SegmentOp::ADD, {v + "norm1", v + "ff2.drop"}, v + "res2");
  list->Systolic(i, SegmentOp::LAYER_NORM, {v + "res2"}, absl::StrCat("h", i + 1), norm("norm2"));
  return absl::OkStatus();
}

// The whole model as ops: the embedding (Linear, ReLU, Linear) and token
// encoding, the layers, then the dimension reduction (Linear, ReLU; under
// embedding_skip it reads the embedding beside the last layer) and
// regression head on the last layer's worker.
absl::Status ListModel(const ModelConfig& model, const LoraConfig& lora,
                       const std::map<std::string, int>& ranks, const HybridPlan& plan,
                       OpList* list) {
  const int64_t d = model.d_model();
  const bool embed = list->Saved("embedding");
  list->Linear("embedding.0", plan.input, "emb.0", embed, -1, model.input_features(), d);
  list->Systolic(-1, SegmentOp::RELU, {"emb.0"}, "emb.1");
  list->Linear("embedding.2", "emb.1", "emb.2", embed, -1, d, d);
  list->Systolic(-1, SegmentOp::ADD_CONST, {"emb.2"}, "h0",
                 [](SegmentOp& op) { op.set_weight("token_encoding"); });
  for (int i = 0; i < model.num_layers(); ++i) {
    RETURN_IF_ERROR(ListLayer(i, model, lora, ranks, list));
  }
  const int last = std::max(model.num_layers() - 1, 0);
  std::string top = absl::StrCat("h", model.num_layers());
  if (model.embedding_skip()) {
    list->Systolic(last, SegmentOp::CONCAT, {top, "emb.2"}, "skip");
    top = "skip";
  }
  list->Linear("reduction.0", top, "red", list->Saved("reduction"), last, HeadInputFeatures(model),
               model.reduction_dim());
  list->Systolic(last, SegmentOp::RELU, {"red"}, "red.relu");
  list->Linear("head", "red.relu", plan.prediction, list->Saved("head"), last,
               model.reduction_dim(), model.output_features());
  return absl::OkStatus();
}

// Copies of the frozen layers, chip by chip: each ReRAM worker's layers
// get the duplication PlanDuplication finds for the vectors a step reads.
absl::Status PlaceCopies(const HybridPlanOptions& options, OpList* list, HybridPlan* plan) {
  for (int worker = 0; worker < options.reram_workers; ++worker) {
    std::vector<PlacedOp*> linears;
    std::vector<ReramLayerDemand> demand;
    for (PlacedOp& op : list->ops) {
      if (op.kind != DeviceKind::reram || op.worker != worker) continue;
      linears.push_back(&op);
      // Forward reads x W^T, backward the transposed read of the same cells.
      demand.push_back({op.op.weight(), op.in_features, op.out_features,
                        2 * options.vectors_per_step});
    }
    if (options.vectors_per_step <= 0 || options.placement == Placement::reram_full) {
      // One copy each; the chip must still hold them.
      for (ReramLayerDemand& l : demand) l.vectors = 0;
    }
    plan->chip_demands.push_back(demand);
    absl::StatusOr<std::vector<int64_t>> copies =
        PlanDuplication(options.reram, options.chip, demand);
    if (!copies.ok()) {
      return absl::Status(copies.status().code(),
                          absl::StrCat("reram worker ", worker, ": ", copies.status().message()));
    }
    for (size_t i = 0; i < linears.size(); ++i) {
      PlacedOp& op = *linears[i];
      const int64_t n = (*copies)[i];
      op.op.set_duplication(int32_t(n));
      std::string name = op.op.weight();
      name = name.substr(0, name.size() - std::string(".weight").size());
      plan->reram_layers.push_back(
          {name, worker, op.in_features, op.out_features, n,
           n * ReramLayerTiles(options.reram, options.chip, op.in_features, op.out_features)});
    }
  }
  return absl::OkStatus();
}

// Cuts the ops into segments: a new one wherever the worker changes.
void CutSegments(const std::vector<PlacedOp>& ops, uint64_t seed, HybridPlan* plan) {
  for (const PlacedOp& op : ops) {
    if (plan->segments.empty() || plan->segments.back().kind != op.kind ||
        plan->segments.back().worker != op.worker) {
      PlannedSegment& s = plan->segments.emplace_back();
      s.kind = op.kind;
      s.worker = op.worker;
      s.spec.set_name(absl::StrCat("lora.", plan->segments.size() - 1, ".", KindName(op.kind)));
      s.spec.set_seed(seed + plan->segments.size());
    }
    PlannedSegment& s = plan->segments.back();
    *s.spec.add_ops() = op.op;
    for (std::string& name : ParamsOf(op.op)) s.params.push_back(std::move(name));
  }
}

// Each segment's inputs (values read but made elsewhere) and outputs
// (values made here and read by a later segment, and the prediction).
void WireSegments(HybridPlan* plan) {
  for (size_t si = 0; si < plan->segments.size(); ++si) {
    SegmentSpec& spec = plan->segments[si].spec;
    std::vector<std::string> made;
    for (const SegmentOp& op : spec.ops()) {
      for (const std::string& in : op.inputs()) {
        if (std::find(made.begin(), made.end(), in) == made.end() &&
            std::find(spec.inputs().begin(), spec.inputs().end(), in) == spec.inputs().end()) {
          spec.add_inputs(in);
        }
      }
      made.push_back(op.output());
    }
    for (const std::string& out : made) {
      bool needed = out == plan->prediction;
      for (size_t later = si + 1; later < plan->segments.size() && !needed; ++later) {
        for (const SegmentOp& op : plan->segments[later].spec.ops()) {
          if (std::find(op.inputs().begin(), op.inputs().end(), out) != op.inputs().end()) {
            needed = true;
            break;
          }
        }
      }
      if (needed) spec.add_outputs(out);
    }
  }
}

}  // namespace

absl::StatusOr<HybridPlan> PlanHybrid(const ModelConfig& model, const LoraConfig& lora,
                                      const std::map<std::string, int>& ranks,
                                      const HybridPlanOptions& options) {
  const std::string placement = Placement::Name_Name(options.placement);
  if (options.placement != Placement::paper && options.placement != Placement::reram_full) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement '", placement, "' has no device plan (paper, reram_full)"));
  }
  if (options.reram_workers < 1 || options.systolic_workers < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", placement,
                     " placement needs at least one reram and one systolic "
                     "worker; registered: ",
                     options.reram_workers, " reram, ", options.systolic_workers, " systolic"));
  }
  HybridPlan plan;
  OpList list(lora, options);
  RETURN_IF_ERROR(ListModel(model, lora, ranks, plan, &list));
  RETURN_IF_ERROR(PlaceCopies(options, &list, &plan));
  CutSegments(list.ops, options.seed, &plan);
  WireSegments(&plan);
  return plan;
}

SegmentSpec HeadSegment(bool trainable) {
  SegmentSpec segment;
  segment.set_name("head");
  SegmentOp* reduce = segment.add_ops();
  reduce->set_type(SegmentOp::LINEAR);
  reduce->set_weight("reduction.0.weight");
  reduce->set_bias("reduction.0.bias");
  reduce->set_trainable(trainable);
  segment.add_ops()->set_type(SegmentOp::RELU);
  SegmentOp* out = segment.add_ops();
  out->set_type(SegmentOp::LINEAR);
  out->set_weight("head.weight");
  out->set_bias("head.bias");
  out->set_trainable(trainable);
  return segment;
}

void DescribeReramLayers(const HybridPlan& plan, HptStatus* hpt) {
  hpt->clear_reram_layers();
  for (const ReramPlacement& r : plan.reram_layers) {
    ReramLayerPlacement& out = *hpt->add_reram_layers();
    out.set_layer(r.layer);
    out.set_worker(r.worker);
    out.set_in_features(r.in_features);
    out.set_out_features(r.out_features);
    out.set_duplication(r.duplication);
    out.set_tiles(r.tiles);
  }
}

void AddTokenEncoding(int64_t tokens, int64_t d_model,
                      std::map<std::string, HostTensor>* params) {
  if (!params->count("token_encoding")) {
    (*params)["token_encoding"] = TokenEncodingTable(tokens, d_model);
  }
}

std::map<std::string, HostTensor> GpuModelTensors(std::map<std::string, HostTensor> params) {
  for (auto it = params.begin(); it != params.end();) {
    const bool device_only =
        it->first == "token_encoding" || absl::EndsWith(it->first, kReramReadSuffix);
    it = device_only ? params.erase(it) : std::next(it);
  }
  return params;
}

std::map<std::string, HostTensor> TakeSuffixed(const std::string& suffix,
                                               std::map<std::string, HostTensor>* tensors) {
  std::map<std::string, HostTensor> out;
  for (auto it = tensors->begin(); it != tensors->end();) {
    if (!absl::EndsWith(it->first, suffix)) {
      ++it;
      continue;
    }
    out[it->first] = std::move(it->second);
    it = tensors->erase(it);
  }
  return out;
}

}  // namespace hpt
