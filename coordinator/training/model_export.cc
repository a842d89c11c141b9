#include "coordinator/training/model_export.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hpt {

absl::StatusOr<std::map<std::string, HostTensor>> MergeLoraTensors(
    std::map<std::string, HostTensor> params, double alpha) {
  const std::string a_suffix = ".A.weight";
  std::map<std::string, HostTensor> merged;
  for (auto& [name, tensor] : params) {
    if (name == "token_encoding") continue;  // a constant, not a parameter
    if (absl::StrContains(name, ".lora_")) continue;
    merged[name] = std::move(tensor);
  }
  for (const auto& [name, a] : params) {
    const size_t at = name.find(".lora_");
    if (at == std::string::npos || !absl::EndsWith(name, a_suffix)) continue;
    const std::string adapter = name.substr(0, name.size() - a_suffix.size());
    const std::string target = adapter.substr(at + 6);  // after ".lora_"
    const std::string base = absl::StrCat(name.substr(0, at), ".", target, ".weight");
    auto b = params.find(adapter + ".B.weight");
    auto w = merged.find(base);
    if (b == params.end() || w == merged.end() || a.shape.size() != 2 ||
        b->second.shape.size() != 2 || w->second.shape.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "adapter '", adapter, "' lacks its B or its base weight '", base, "'"));
    }
    const int64_t rank = a.shape[0], in = a.shape[1], out = b->second.shape[0];
    if (b->second.shape[1] != rank || w->second.shape != std::vector<int64_t>{out, in}) {
      return absl::InvalidArgumentError(
          absl::StrCat("adapter '", adapter, "' does not fit '", base, "'"));
    }
    const double scale = alpha / double(rank);
    FloatBuffer& wd = w->second.data;
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        double sum = 0;
        for (int64_t r = 0; r < rank; ++r) {
          sum += double(b->second.data[o * rank + r]) * a.data[r * in + i];
        }
        wd[o * in + i] += float(scale * sum);
      }
    }
  }
  return merged;
}

}  // namespace hpt
