// Exporting a trained model: the LoRA adapters folded into their base
// weights (W += alpha / r * B A, the same as models/lora.h MergeLora) and
// everything that is not a model parameter dropped, so the result loads
// into a plain SpatioTemporalTransformer.
//
//   ASSIGN_OR_RETURN(auto merged, MergeLoraTensors(std::move(params), alpha));
#ifndef HPT_COORDINATOR_TRAINING_MODEL_EXPORT_H_
#define HPT_COORDINATOR_TRAINING_MODEL_EXPORT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"

namespace hpt {

// `params` names follow the model ("layers.0.self_attn.lora_q_proj.A.weight"
// beside "layers.0.self_attn.q_proj.weight"). The rank of each adapter is
// its A's row count.
absl::StatusOr<std::map<std::string, HostTensor>> MergeLoraTensors(
    std::map<std::string, HostTensor> params, double alpha);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_MODEL_EXPORT_H_
