#include "models/lora.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"

namespace hpt {

int AutoRank(const torch::Tensor& delta, double energy, int max_rank) {
  torch::NoGradGuard no_grad;
  const torch::Tensor s = at::linalg_svdvals(delta.to(torch::kCPU).to(torch::kFloat64));
  const torch::Tensor e = s * s;
  const double total = e.sum().item<double>();
  if (!(total > 0)) return 1;
  const torch::Tensor share = torch::cumsum(e, 0) / total;
  int rank = 1;
  const auto acc = share.accessor<double, 1>();
  while (rank < share.size(0) && acc[rank - 1] < energy) ++rank;
  return std::max(1, std::min(rank, max_rank));
}

absl::StatusOr<std::map<std::string, int>> ApplyLora(
    SpatioTemporalTransformer& model, const LoraConfig& raw,
    const std::map<std::string, torch::Tensor>& initial,
    const std::map<std::string, int>& fixed_ranks) {
  const LoraConfig config = LoraDefaults(raw);
  if (absl::Status s = ValidateLoraConfig(config); !s.ok()) return s;
  const int64_t num_layers = model->config().num_layers();
  std::set<int64_t> layers(config.layers().begin(), config.layers().end());
  for (int64_t layer : layers) {
    if (layer < 0 || layer >= num_layers) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hpt.lora.layers entry ", layer, " is not an encoder layer of this model (0 to ",
          num_layers - 1, ")"));
    }
  }
  const bool some_layers = !layers.empty();
  if (!some_layers) {
    for (int64_t layer = 0; layer < num_layers; ++layer) layers.insert(layer);
  }
  std::map<std::string, int> ranks;
  for (int64_t layer : layers) {
    MultiHeadSelfAttention& attention = model->Attention(layer);
    for (const std::string& target : config.targets()) {
      const std::string name = absl::StrCat("layers.", layer, ".self_attn.", target);
      int rank = config.rank();
      if (auto fixed = fixed_ranks.find(name); fixed != fixed_ranks.end()) {
        if (fixed->second < 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("LoRA rank of '", name, "' must be positive, got ", fixed->second));
        }
        rank = fixed->second;
      } else if (config.auto_rank()) {
        auto it = initial.find(name + ".weight");
        if (it == initial.end()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "auto LoRA rank needs the initial weight of '", name, "'"));
        }
        const torch::Tensor delta =
            attention->Projection(target)->weight.detach().cpu() - it->second.cpu();
        rank = AutoRank(delta, config.auto_energy(), config.max_rank());
      }
      attention->AddAdapter(target, rank, config.alpha(), config.dropout());
      ranks[name] = rank;
    }
  }
  // Every layer: train the adapters and modules_to_save, freeze the rest.
  // Some layers: freeze those layers' own parameters; the rest trains on.
  std::vector<std::string> switched;
  for (int64_t layer : layers) switched.push_back(absl::StrCat("layers.", layer, "."));
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    bool trains = absl::StrContains(name, ".lora_");
    if (some_layers) {
      bool in_switched = false;
      for (const std::string& prefix : switched) in_switched |= absl::StartsWith(name, prefix);
      trains |= !in_switched;
    } else {
      for (const std::string& m : config.modules_to_save()) {
        trains |= absl::StartsWith(name, m + ".");
      }
    }
    item.value().set_requires_grad(trains);
  }
  return ranks;
}

void MergeLora(SpatioTemporalTransformer& model) {
  torch::NoGradGuard no_grad;
  for (int64_t layer = 0; layer < model->config().num_layers(); ++layer) {
    MultiHeadSelfAttention& attention = model->Attention(layer);
    for (auto& [target, adapter] : attention->adapters) {
      attention->Projection(target)->weight.add_(adapter->Delta());
    }
    attention->RemoveAdapters();
  }
  for (auto& p : model->parameters()) p.set_requires_grad(true);
}

}  // namespace hpt
