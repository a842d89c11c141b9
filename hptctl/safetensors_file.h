// The safetensors format (huggingface/safetensors, "Format" in its README):
// an 8-byte little-endian header length N, N bytes of JSON naming each
// tensor's dtype, shape and [begin, end) byte offsets into the data that
// follows (plus an optional "__metadata__" object of strings), then the
// tensors' bytes, little-endian and C-ordered. Written here without
// LibTorch; Python reads it with safetensors.torch.load_file.
//
//   RETURN_IF_ERROR(WriteSafetensors(params, {{"format", "pt"}}, "model.safetensors"));
#ifndef HPT_HPTCTL_SAFETENSORS_FILE_H_
#define HPT_HPTCTL_SAFETENSORS_FILE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"

namespace hpt {

// float32 tensors, sorted by name; the header is padded with spaces to a
// multiple of 8 bytes so the data is aligned.
absl::Status WriteSafetensors(const std::map<std::string, HostTensor>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              const std::string& path);

struct SafetensorsContents {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Reads what WriteSafetensors writes (F32 tensors only). Errors name the
// file and what is wrong with it; they never quote its bytes.
absl::StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path);

}  // namespace hpt

#endif  // HPT_HPTCTL_SAFETENSORS_FILE_H_
