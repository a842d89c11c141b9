#include "hptctl/model_file.h"

#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/st_transformer.h"

namespace hpt {
namespace {

// The first line of a library's message (LibTorch's carry a stack trace).
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

absl::Status WriteTorchModel(const ModelConfig& config,
                             const std::map<std::string, HostTensor>& parameters,
                             const std::string& path) {
  // A folder that is missing or not writable is said in one line, before
  // any work.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (access(dir.c_str(), W_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write '", path, "': folder '", dir, "': ", std::strerror(errno)));
  }
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
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("writing '", path, "': ", FirstLine(e.what_without_backtrace())));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("writing '", path, "': ", FirstLine(e.what())));
  }
  return absl::OkStatus();
}

}  // namespace hpt
