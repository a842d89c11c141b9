#include "models/lora_config.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace hpt {

LoraConfig LoraDefaults(LoraConfig c) {
  // docs/method.md "The model" / the paper's PEFT setup: r 8, alpha 64, dropout 0.1, q and v.
  if (c.rank() == 0 && !c.auto_rank()) c.set_rank(8);
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
        absl::StrCat("hpt.lora.rank must be positive (or set auto_rank), got ", c.rank()));
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

}  // namespace hpt
