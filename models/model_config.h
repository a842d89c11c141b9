// Presets of the spatio-temporal encoder transformer (docs/method.md, "The model") and their
// validation. Torch-free: the coordinator resolves presets without LibTorch.
//
//   ASSIGN_OR_RETURN(ModelConfig config, PresetModelConfig("wind"));
//   config.set_input_features(12);
#ifndef HPT_MODELS_MODEL_CONFIG_H_
#define HPT_MODELS_MODEL_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/common.pb.h"

namespace hpt {

// The paper's four applications (12 layers, d_model 512; 16 heads and
// FF x4 for swe and weather, 8 heads for covid and wind, FF x2 for wind)
// and "tiny" for tests and the demo. The four feed the input embedding
// beside the encoder's output into the dimension reduction, as the
// paper's models do; tiny does not. input/output_features are left 0:
// they come from the data.
absl::StatusOr<ModelConfig> PresetModelConfig(const std::string& preset);
std::vector<std::string> PresetNames();

// The width the dimension reduction reads: the last layer's d_model, and
// with embedding_skip the input embedding's d_model beside it.
int64_t HeadInputFeatures(const ModelConfig& config);

// Checks every field; messages name the field ("model.num_heads") and value.
absl::Status ValidateModelConfig(const ModelConfig& config);

// Whether `units` let an exported model work in the data's units: its
// tokens are the stations, each with a mean and a standard deviation.
bool UsesDataUnits(const DataUnits& units);

}  // namespace hpt

#endif  // HPT_MODELS_MODEL_CONFIG_H_
