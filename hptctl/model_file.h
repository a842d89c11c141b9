// Writing an exported model as a LibTorch file: the parameters go into a
// SpatioTemporalTransformer built from the exported configuration, saved
// with torch::save, so a user loads it with
//
//   hpt::SpatioTemporalTransformer model(config);
//   torch::load(model, "model.pt");
//
// (config as hptctl export prints it and writes beside the file, FILE.json).
// Includes no LibTorch header itself.
#ifndef HPT_HPTCTL_MODEL_FILE_H_
#define HPT_HPTCTL_MODEL_FILE_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "common/host_tensor.h"
#include "proto/common.pb.h"

namespace hpt {

// Every model parameter must be present with its shape (errors name it).
absl::Status WriteTorchModel(const ModelConfig& config,
                             const std::map<std::string, HostTensor>& parameters,
                             const std::string& path);

}  // namespace hpt

#endif  // HPT_HPTCTL_MODEL_FILE_H_
