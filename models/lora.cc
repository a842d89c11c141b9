#include "models/lora.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"

namespace hpt {

LoraConfig LoraDefaults(LoraConfig c) {
  // DESIGN §4 / the paper's PEFT setup: r 8, alpha 64, dropout 0.1, q and v.
  if (c.alpha() == 0) c.set_alpha(64);
  if (c.dropout() == 0 && !c.dropout_set()) c.set_dropout(0.1);
  if (c.targets().empty()) {
    c.add_targets("q_proj");
    c.add_targets("v_proj");
  }
  if (c.modules_to_save().empty()) {
    c.add_modules_to_save("embedding");
    c.add_modules_to_save("reduction");
    c.add_modules_to_save("head");
  }
  if (c.auto_energy() == 0) c.set_auto_energy(0.9);
  if (c.max_rank() == 0) c.set_max_rank(64);
  return c;
}

absl::Status ValidateLoraConfig(const LoraConfig& c) {
  if (c.rank() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("hpt.lora.rank must be positive, or 0 for auto, got ", c.rank()));
  }
  if (!(c.alpha() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("hpt.lora.alpha must be positive, got ", c.alpha()));
  }
  if (!(c.dropout() >= 0 && c.dropout() < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("hpt.lora.dropout must be in [0, 1), got ", c.dropout()));
  }
  if (!(c.auto_energy() > 0 && c.auto_energy() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hpt.lora.auto_energy must be in (0, 1], got ", c.auto_energy()));
  }
  const std::set<std::string> projections = {"q_proj", "k_proj", "v_proj", "o_proj"};
  for (const std::string& t : c.targets()) {
    if (!projections.count(t)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hpt.lora.targets entry '", t, "' is not q_proj, k_proj, v_proj or o_proj"));
    }
  }
  const std::set<std::string> modules = {"embedding", "reduction", "head"};
  for (const std::string& m : c.modules_to_save()) {
    if (!modules.count(m)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hpt.lora.modules_to_save entry '", m, "' is not embedding, reduction or head"));
    }
  }
  return absl::OkStatus();
}

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
    const std::map<std::string, torch::Tensor>& initial) {
  const LoraConfig config = LoraDefaults(raw);
  if (absl::Status s = ValidateLoraConfig(config); !s.ok()) return s;
  std::map<std::string, int> ranks;
  for (int64_t layer = 0; layer < model->config().num_layers(); ++layer) {
    MultiHeadSelfAttention& attention = model->Attention(layer);
    for (const std::string& target : config.targets()) {
      const std::string name = absl::StrCat("layers.", layer, ".self_attn.", target);
      int rank = config.rank();
      if (rank == 0) {
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
  // Train the adapters and modules_to_save; freeze the rest.
  for (auto& item : model->named_parameters()) {
    bool trains = absl::StrContains(item.key(), ".lora_");
    for (const std::string& m : config.modules_to_save()) {
      trains |= absl::StartsWith(item.key(), m + ".");
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
