// LoRA for the spatio-temporal transformer: low-rank adapters beside
// attention projections (delta W = B A * alpha / r, B initialised to 0 so a
// new adapter leaves the output unchanged), freezing of everything else but
// the modules trained in full, an "auto" rank from the singular values of
// each target's change since training began, and merging for export.
// Includes LibTorch.
#ifndef HPT_MODELS_LORA_H_
#define HPT_MODELS_LORA_H_

#include <map>
#include <string>

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "models/lora_config.h"
#include "models/st_transformer.h"
#include "proto/common.pb.h"

namespace hpt {

// Smallest rank whose singular values hold `energy` of the squared
// Frobenius norm of `delta`, capped at max_rank (at least 1).
int AutoRank(const torch::Tensor& delta, double energy, int max_rank);

// Adds adapters to every layer's targets and freezes the rest (but
// modules_to_save); with config.layers, adapters on those layers' targets
// only, and only those layers' own parameters freeze. `initial` (name ->
// weight at the start of training) is needed for rank 0 (auto). Returns the rank chosen per adapter, keyed by
// the target's parameter name ("layers.0.self_attn.q_proj"). A target in
// `fixed_ranks` gets that rank (a restored adapter keeps its shape).
absl::StatusOr<std::map<std::string, int>> ApplyLora(
    SpatioTemporalTransformer& model, const LoraConfig& config,
    const std::map<std::string, torch::Tensor>& initial,
    const std::map<std::string, int>& fixed_ranks = {});

// Folds every adapter into its base weight and removes the adapters, so
// the model is a plain SpatioTemporalTransformer again.
void MergeLora(SpatioTemporalTransformer& model);

}  // namespace hpt

#endif  // HPT_MODELS_LORA_H_
