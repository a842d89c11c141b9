// A trained model's weights put to use: loaded into a
// SpatioTemporalTransformer, or run on inputs in one call. Includes
// LibTorch (through st_transformer.h): include it only from .cc files that
// run the model; models/predict.h is the torch-free way to predict.
//
//   SpatioTemporalTransformer model(config);
//   RETURN_IF_ERROR(LoadWeights(params, *model));
#ifndef HPT_MODELS_MODEL_WEIGHTS_H_
#define HPT_MODELS_MODEL_WEIGHTS_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "common/host_tensor.h"
#include "models/st_transformer.h"

namespace hpt {

// Copies every parameter of `model` from `params` (names as
// named_parameters gives them). INVALID_ARGUMENT names a missing parameter
// or one of the wrong shape; extra entries are ignored.
absl::Status LoadWeights(const std::map<std::string, HostTensor>& params,
                         SpatioTemporalTransformerImpl& model);

}  // namespace hpt

#endif  // HPT_MODELS_MODEL_WEIGHTS_H_
