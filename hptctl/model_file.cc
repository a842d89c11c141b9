#include "hptctl/model_file.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/st_transformer.h"

namespace hpt {

absl::Status WriteTorchModel(const ModelConfig& config,
                             const std::map<std::string, HostTensor>& parameters,
                             const std::string& path) {
  try {
    SpatioTemporalTransformer model(config);
    torch::NoGradGuard no_grad;
    for (auto& item : model->named_parameters()) {
      auto it = parameters.find(item.key());
      if (it == parameters.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("the export lacks parameter '", item.key(), "'"));
      }
      const std::vector<int64_t> want(item.value().sizes().begin(),
                                      item.value().sizes().end());
      if (it->second.shape != want) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parameter '", item.key(), "' is ", it->second.ShapeString(),
            " but the model needs [", absl::StrJoin(want, ", "), "]"));
      }
      item.value().copy_(torch::from_blob(const_cast<float*>(it->second.data.data()),
                                          item.value().sizes(), torch::kFloat32));
    }
    torch::save(model, path);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("writing '", path, "': ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace hpt
