#include "models/model_flops.h"

#include "models/model_config.h"

namespace hpt {

int64_t ParameterCount(const ModelConfig& c, bool encoder_only) {
  const int64_t d = c.d_model(), ff = int64_t(c.ff_multiplier()) * d;
  int64_t n = (c.input_features() * d + d) + (d * d + d);  // embedding MLP
  n += c.num_layers() * (4 * (d * d + d) + (d * ff + ff) + (ff * d + d) + 4 * d);
  if (!encoder_only) {
    n += (HeadInputFeatures(c) * c.reduction_dim() + c.reduction_dim()) +
         (c.reduction_dim() * c.output_features() + c.output_features());
  }
  return n;
}

ModelWork ForwardWork(const ModelConfig& c, int64_t batch, int64_t tokens,
                      bool encoder_only) {
  const double b = double(batch), t = double(tokens), d = c.d_model(),
               ff = double(c.ff_multiplier()) * d;
  const double rows = b * t;
  ModelWork w;
  // 2 FLOPs per multiply-accumulate.
  w.flops += 2 * rows * (c.input_features() * d + d * d);
  const double per_layer = 2 * rows * (4 * d * d + 2 * d * ff)  // projections, FF
                           + 2 * 2 * b * t * t * d;              // scores, context
  w.flops += c.num_layers() * per_layer;
  if (!encoder_only) {
    w.flops += 2 * rows *
               (double(HeadInputFeatures(c)) * c.reduction_dim() +
                double(c.reduction_dim()) * c.output_features());
  }
  // Traffic: every parameter read once, plus each layer's activations
  // written and read about ten times (projections, attention, FF, norms),
  // 4 bytes each.
  w.bytes = 4.0 * double(ParameterCount(c, encoder_only)) +
            4.0 * 10 * rows * d * c.num_layers() + 4.0 * b * t * t * c.num_heads() * 2 *
                                                       c.num_layers();
  return w;
}

}  // namespace hpt
