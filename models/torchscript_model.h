// The trained model as a TorchScript module, written by the code that owns
// the model's forward: the coordinator serialises it for `hptctl export`,
// which writes the bytes as FILE.pt and links no LibTorch itself.
//
//  - FILE.pt: a TorchScript module with its forward, built in C++ with
//    torch::jit::Module (submodules mirroring the model's names, each
//    method compiled from TorchScript source by Module::define) and saved
//    with Module::save. Python loads it with torch.jit.load and no project
//    code; C++ with torch::jit::load, or torch::load into a
//    SpatioTemporalTransformer (the parameter names are the model's).
//
// (hptctl writes FILE.safetensors and FILE.json beside it from the same
// export stream.)
//
// The module is for inference: dropout is off, as in the model's eval mode.
// With the job's data units (UsesDataUnits), its forward takes a window of
// each station's raw values [samples, stations, input_steps] and returns
// raw forecasts [samples, stations, 1] (buffers data_mean and data_sd hold
// the training rows' statistics); forward_normalised is the model on
// normalised values. Without them forward is forward_normalised.
// Includes no LibTorch header itself.
#ifndef HPT_MODELS_TORCHSCRIPT_MODEL_H_
#define HPT_MODELS_TORCHSCRIPT_MODEL_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "proto/common.pb.h"

namespace hpt {

// FILE.pt's bytes. Every model parameter must be present with its shape
// (errors name it).
absl::StatusOr<std::string> TorchModelBytes(const ModelConfig& config,
                                            const std::map<std::string, HostTensor>& parameters,
                                            const DataUnits& units);

// The TorchScript source of the module's methods for `config`, keyed by
// module path ("" the top, "layers.0.self_attn", ...): what
// TorchModelBytes compiles. Exposed for tests and docs.
std::map<std::string, std::string> TorchScriptSource(const ModelConfig& config,
                                                     bool data_units = false);

}  // namespace hpt

#endif  // HPT_MODELS_TORCHSCRIPT_MODEL_H_
