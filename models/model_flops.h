// Analytic work of the spatio-temporal transformer, for cost models: FLOPs
// and memory traffic of a forward pass over a batch (backward: about twice
// the forward's FLOPs; an Adam update: about 10 FLOPs and 16 bytes of
// traffic per parameter, counting parameter, gradient and two moments).
// Torch-free.
#ifndef HPT_MODELS_MODEL_FLOPS_H_
#define HPT_MODELS_MODEL_FLOPS_H_

#include <cstdint>

#include "proto/common.pb.h"

namespace hpt {

struct ModelWork {
  double flops = 0;
  double bytes = 0;
};

// Forward of `batch` samples of `tokens` tokens. encoder_only leaves out
// the dimension-reduction MLP and the regression layer.
ModelWork ForwardWork(const ModelConfig& config, int64_t batch, int64_t tokens,
                      bool encoder_only);
int64_t ParameterCount(const ModelConfig& config, bool encoder_only);

}  // namespace hpt

#endif  // HPT_MODELS_MODEL_FLOPS_H_
