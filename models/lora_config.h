// LoRA configuration: defaults and validation, without LibTorch (the
// coordinator checks job specs with these; models/lora.h applies them).
//
//   LoraConfig config = LoraDefaults(spec.hpt().lora());
//   RETURN_IF_ERROR(ValidateLoraConfig(config));
#ifndef HPT_MODELS_LORA_CONFIG_H_
#define HPT_MODELS_LORA_CONFIG_H_

#include "absl/status/status.h"
#include "proto/common.pb.h"

namespace hpt {

// Fills LoRA defaults (docs/method.md, "The model"): rank 8 (unless auto_rank), alpha 64,
// dropout 0.1 (unless dropout_set), targets q_proj and v_proj,
// modules_to_save embedding, reduction and head, auto energy 0.9, max
// rank 64.
LoraConfig LoraDefaults(LoraConfig config);
// Errors name the field (hpt.lora.*).
absl::Status ValidateLoraConfig(const LoraConfig& config);

}  // namespace hpt

#endif  // HPT_MODELS_LORA_CONFIG_H_
