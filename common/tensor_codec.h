// Converts HostTensor to and from the wire (hpt.Tensor, hpt.TensorChunk).
// Tensors larger than one message travel as chunks: SplitIntoChunks cuts a
// tensor, ChunkAssembler puts a stream of chunks back together and checks
// that every byte arrived exactly once, in order.
#ifndef HPT_COMMON_TENSOR_CODEC_H_
#define HPT_COMMON_TENSOR_CODEC_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "proto/common.pb.h"

namespace hpt {

// Checks dtype, shape and byte count of a wire tensor. `field` names the
// request field in error messages, e.g. "ForwardRequest.inputs".
absl::Status ValidateTensorProto(const Tensor& proto, const std::string& field);

void ToProto(const HostTensor& tensor, const std::string& name, Tensor* proto);
absl::StatusOr<HostTensor> FromProto(const Tensor& proto,
                                     const std::string& field);
// The same, moving the float bytes between the tensor and the message
// instead of copying them (`tensor` is left empty; so is `proto`'s data,
// on success).
void ToProto(HostTensor&& tensor, const std::string& name, Tensor* proto);
absl::StatusOr<HostTensor> FromProto(Tensor&& proto, const std::string& field);

// Raw-buffer forms used by the LibTorch codec so it needs no HostTensor copy.
void FloatsToProto(const float* data, const std::vector<int64_t>& shape,
                   const std::string& name, Tensor* proto);

inline constexpr int64_t kDefaultChunkBytes = 1 << 20;

// Cuts `num_floats` floats into chunks of at most max_chunk_bytes.
std::vector<TensorChunk> SplitIntoChunks(const std::string& name,
                                         const std::vector<int64_t>& shape,
                                         const float* data,
                                         int64_t max_chunk_bytes);

// Reassembles named tensors from a stream of chunks. Not thread-safe.
class ChunkAssembler {
 public:
  absl::Status Add(const TensorChunk& chunk);
  // Fails if a tensor is missing bytes.
  absl::StatusOr<std::map<std::string, HostTensor>> Finish();

 private:
  struct Partial {
    HostTensor tensor;
    int64_t received_bytes = 0;
  };
  std::map<std::string, Partial> partial_;
};

// A GPU session's attention projection weight at the job's first load (the
// reference an auto LoRA rank measures the change from), in snapshots with
// optimizer state and in the loads that restore them: "<name>@initial".
inline constexpr char kInitialSuffix[] = "@initial";
// A ReRAM worker's frozen layer's read state (its crossbars' noise stream),
// in snapshots with optimizer state and the loads that restore them:
// "<name>@reram_read".
inline constexpr char kReramReadSuffix[] = "@reram_read";

// Every tensor of `tensors` cut into chunks (SplitIntoChunks), by name:
// the inverse of AssembleChunks.
std::vector<TensorChunk> SplitTensors(const std::map<std::string, HostTensor>& tensors,
                                      int64_t max_chunk_bytes = kDefaultChunkBytes);

// The named tensors of a complete set of chunks (ChunkAssembler over all).
absl::StatusOr<std::map<std::string, HostTensor>> AssembleChunks(
    const std::vector<TensorChunk>& chunks);

// The most elements a wire tensor may declare (4 GiB of fp32).
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 30;

// The data bytes of `chunks` (what they move over the wire, headers aside).
int64_t ChunkBytes(const std::vector<TensorChunk>& chunks);

}  // namespace hpt

#endif  // HPT_COMMON_TENSOR_CODEC_H_
