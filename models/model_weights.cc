#include "models/model_weights.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/predict.h"

namespace hpt {

absl::Status LoadWeights(const std::map<std::string, HostTensor>& params,
                         SpatioTemporalTransformerImpl& model) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    auto it = params.find(item.key());
    if (it == params.end()) {
      return absl::InvalidArgumentError(absl::StrCat("the weights lack parameter '", item.key(), "'"));
    }
    const std::vector<int64_t> want(item.value().sizes().begin(), item.value().sizes().end());
    if (it->second.shape != want) {
      return absl::InvalidArgumentError(absl::StrCat("parameter '", item.key(), "' is ",
                                                     it->second.ShapeString(), " but the model needs [",
                                                     absl::StrJoin(want, ", "), "]"));
    }
    item.value().copy_(torch::from_blob(const_cast<float*>(it->second.data.data()),
                                        item.value().sizes(), torch::kFloat32));
  }
  return absl::OkStatus();
}

absl::StatusOr<HostTensor> Predict(const ModelConfig& config,
                                   const std::map<std::string, HostTensor>& params,
                                   const HostTensor& input) {
  const std::vector<int64_t>& shape = input.shape;
  if (shape.size() != 2 && shape.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input is ", input.ShapeString(), "; it must be [samples, tokens, features] or [tokens, features]"));
  }
  if (shape.back() != config.input_features()) {
    return absl::InvalidArgumentError(absl::StrCat("input is ", input.ShapeString(), ": its last dimension must be the model's ",
                                                   config.input_features(), " input features"));
  }
  for (int64_t d : shape) {
    if (d < 1) return absl::InvalidArgumentError(absl::StrCat("input is ", input.ShapeString(), ": a dimension is empty"));
  }
  // A NaN would come back as NaN predictions for every token it reaches
  // through attention, without a word.
  const auto bad =
      std::find_if(input.data.begin(), input.data.end(), [](float v) { return !std::isfinite(v); });
  if (bad != input.data.end()) {
    std::vector<int64_t> at(shape.size());
    for (int64_t i = int64_t(bad - input.data.begin()), d = int64_t(shape.size()) - 1; d >= 0;
         --d) {
      at[d] = i % shape[d];
      i /= shape[d];
    }
    return absl::InvalidArgumentError(
        absl::StrCat("input holds a non-finite value (", *bad, ") at [", absl::StrJoin(at, ", "),
                     "]: fill the gaps first (training's data.missing: interpolate fills them "
                     "linearly in time)"));
  }
  try {
    SpatioTemporalTransformer model(config);
    if (absl::Status s = LoadWeights(params, *model); !s.ok()) return s;
    model->eval();
    torch::NoGradGuard no_grad;
    std::vector<int64_t> batched = shape;
    if (batched.size() == 2) batched.insert(batched.begin(), 1);
    const torch::Tensor x =
        torch::from_blob(const_cast<float*>(input.data.data()), batched, torch::kFloat32);
    const torch::Tensor y = model->forward(x).contiguous();
    std::vector<int64_t> out_shape = shape;
    out_shape.back() = y.size(2);
    HostTensor out(out_shape);
    std::copy_n(y.data_ptr<float>(), out.data.size(), out.data.data());
    return out;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    return absl::InvalidArgumentError(absl::StrCat("the model cannot run on input ", input.ShapeString(),
                                                   ": ", what.substr(0, what.find('\n'))));
  }
}

}  // namespace hpt
