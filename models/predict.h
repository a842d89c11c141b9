// The model's output for given inputs, from its configuration and weights,
// without LibTorch in the caller's headers: what JobService.Predict
// answers, and what an exported model must reproduce in Python.
//
//   ASSIGN_OR_RETURN(HostTensor y, Predict(config, params, x));  // x [n, tokens, features]
#ifndef HPT_MODELS_PREDICT_H_
#define HPT_MODELS_PREDICT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "proto/common.pb.h"

namespace hpt {

// Runs the model in evaluation mode (no dropout) on the CPU. `input` is
// [n, tokens, input_features] or [tokens, input_features] (one sample);
// the output has the same leading dimensions and output_features last.
// INVALID_ARGUMENT names what does not fit.
absl::StatusOr<HostTensor> Predict(const ModelConfig& config,
                                   const std::map<std::string, HostTensor>& params,
                                   const HostTensor& input);

}  // namespace hpt

#endif  // HPT_MODELS_PREDICT_H_
