// libFuzzer target: the tensor codec on arbitrary wire bytes: a Tensor
// message decoded, and a stream of chunks reassembled.
#include "common/tensor_codec.h"
#include "fuzz/fuzz_util.h"
#include "google/protobuf/stubs/logging.h"

// Invalid UTF-8 in string fields is an expected parse failure; protobuf's
// log line for each would drown the fuzzer's output.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = hpt::AsText(data, size);
  hpt::Tensor tensor;
  if (tensor.ParseFromString(bytes)) {
    if (hpt::ValidateTensorProto(tensor, "fuzz").ok()) {
      auto host = hpt::FromProto(tensor, "fuzz");
      (void)host;
    }
  }
  // The same bytes as a sequence of length-prefixed chunks.
  std::vector<hpt::TensorChunk> chunks;
  size_t at = 0;
  while (at < bytes.size() && chunks.size() < 16) {
    const size_t n = std::min<size_t>(uint8_t(bytes[at]), bytes.size() - at - 1);
    hpt::TensorChunk chunk;
    if (chunk.ParseFromString(bytes.substr(at + 1, n))) chunks.push_back(chunk);
    at += n + 1;
  }
  auto assembled = hpt::AssembleChunks(chunks);
  (void)assembled;
  return 0;
}
