#include "models/model_shape.h"

#include "absl/strings/str_cat.h"
#include "models/model_flops.h"

namespace hpt {

std::string GroupThousands(int64_t n) {
  const std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string ModelShapeLine(const ModelConfig& c) {
  return absl::StrCat(c.num_layers(), c.num_layers() == 1 ? " layer" : " layers", ", d_model ",
                      c.d_model(), ", ", c.num_heads(), c.num_heads() == 1 ? " head" : " heads",
                      ", FF x", c.ff_multiplier(), ", reduction ", c.reduction_dim(),
                      c.embedding_skip() ? ", embedding skip" : "", "; ",
                      GroupThousands(ParameterCount(c, /*encoder_only=*/false)), " parameters");
}

}  // namespace hpt
