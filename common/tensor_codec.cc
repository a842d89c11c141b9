#include "common/tensor_codec.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hpt {
namespace {

std::string ShapeToString(const google::protobuf::RepeatedField<int64_t>& s) {
  return "[" + absl::StrJoin(s, ", ") + "]";
}

absl::Status CheckShape(const google::protobuf::RepeatedField<int64_t>& shape,
                        const std::string& field, int64_t* elements) {
  *elements = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".shape ", ShapeToString(shape), " has a negative dimension"));
    }
  }
  // The product, refused past kMaxTensorElements before it can overflow.
  for (int64_t d : shape) {
    if (d != 0 && *elements > kMaxTensorElements / d) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".shape ", ShapeToString(shape), " is over ", kMaxTensorElements,
          " elements"));
    }
    *elements *= d;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTensorProto(const Tensor& proto,
                                 const std::string& field) {
  if (proto.dtype() != FLOAT32) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".dtype must be FLOAT32, got ",
                     DType_Name(proto.dtype())));
  }
  int64_t elements = 0;
  absl::Status shape_ok = CheckShape(proto.shape(), field, &elements);
  if (!shape_ok.ok()) return shape_ok;
  const int64_t expected = elements * static_cast<int64_t>(sizeof(float));
  if (static_cast<int64_t>(proto.data().size()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".data has ", proto.data().size(), " bytes but shape ",
        ShapeToString(proto.shape()), " needs ", expected));
  }
  return absl::OkStatus();
}

namespace {

// `proto` reset to an fp32 tensor `name` of `shape`, its data not yet set.
void SetHeader(const std::string& name, const std::vector<int64_t>& shape, Tensor* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_dtype(FLOAT32);
  for (int64_t d : shape) proto->add_shape(d);
}

// A validated message's tensor, holding `bytes` (its data, copied or moved).
HostTensor WithBytes(const Tensor& proto, std::string bytes) {
  HostTensor tensor;
  tensor.shape.assign(proto.shape().begin(), proto.shape().end());
  tensor.data = FloatBuffer::FromBytes(std::move(bytes));
  return tensor;
}

}  // namespace

void FloatsToProto(const float* data, const std::vector<int64_t>& shape,
                   const std::string& name, Tensor* proto) {
  SetHeader(name, shape, proto);
  proto->set_data(reinterpret_cast<const char*>(data),
                  HostTensor::NumElements(shape) * sizeof(float));
}

void ToProto(const HostTensor& tensor, const std::string& name, Tensor* proto) {
  FloatsToProto(tensor.data.data(), tensor.shape, name, proto);
}

absl::StatusOr<HostTensor> FromProto(const Tensor& proto,
                                     const std::string& field) {
  absl::Status valid = ValidateTensorProto(proto, field);
  if (!valid.ok()) return valid;
  return WithBytes(proto, proto.data());  // one pass: the bytes copied as bytes
}

absl::StatusOr<HostTensor> FromProto(Tensor&& proto, const std::string& field) {
  absl::Status valid = ValidateTensorProto(proto, field);
  if (!valid.ok()) return valid;
  return WithBytes(proto, std::move(*proto.mutable_data()));
}

void ToProto(HostTensor&& tensor, const std::string& name, Tensor* proto) {
  SetHeader(name, tensor.shape, proto);
  proto->set_data(std::move(tensor.data).TakeBytes());
}

std::vector<TensorChunk> SplitTensors(const std::map<std::string, HostTensor>& tensors,
                                      int64_t max_chunk_bytes) {
  std::vector<TensorChunk> chunks;
  for (const auto& [name, t] : tensors) {
    for (TensorChunk& c : SplitIntoChunks(name, t.shape, t.data.data(), max_chunk_bytes)) {
      chunks.push_back(std::move(c));
    }
  }
  return chunks;
}

std::vector<TensorChunk> SplitIntoChunks(const std::string& name,
                                         const std::vector<int64_t>& shape,
                                         const float* data,
                                         int64_t max_chunk_bytes) {
  if (max_chunk_bytes <= 0) max_chunk_bytes = kDefaultChunkBytes;
  // Keep chunks float-aligned so a receiver could decode each on its own.
  max_chunk_bytes = std::max<int64_t>(
      sizeof(float), max_chunk_bytes / sizeof(float) * sizeof(float));
  const int64_t total = HostTensor::NumElements(shape) * sizeof(float);
  const char* bytes = reinterpret_cast<const char*>(data);
  std::vector<TensorChunk> chunks;
  int64_t offset = 0;
  do {
    const int64_t size = std::min(max_chunk_bytes, total - offset);
    TensorChunk& chunk = chunks.emplace_back();
    chunk.set_name(name);
    for (int64_t d : shape) chunk.add_shape(d);
    chunk.set_dtype(FLOAT32);
    chunk.set_offset_bytes(offset);
    chunk.set_total_bytes(total);
    chunk.set_data(bytes + offset, size);
    offset += size;
  } while (offset < total);
  return chunks;
}

absl::Status ChunkAssembler::Add(const TensorChunk& chunk) {
  const std::string field = absl::StrCat("chunk of tensor '", chunk.name(), "'");
  if (chunk.name().empty()) {
    return absl::InvalidArgumentError("TensorChunk.name is empty");
  }
  if (chunk.dtype() != FLOAT32) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": dtype must be FLOAT32"));
  }
  int64_t elements = 0;
  absl::Status shape_ok = CheckShape(chunk.shape(), field, &elements);
  if (!shape_ok.ok()) return shape_ok;
  const int64_t total = elements * static_cast<int64_t>(sizeof(float));
  if (chunk.total_bytes() != total) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": total_bytes ", chunk.total_bytes(),
                     " does not match shape ", ShapeToString(chunk.shape())));
  }
  auto [it, inserted] = partial_.try_emplace(chunk.name());
  Partial& partial = it->second;
  if (inserted) {
    // The buffer grows with the bytes that arrive, so a chunk that merely
    // declares a large shape allocates nothing.
    partial.tensor.shape.assign(chunk.shape().begin(), chunk.shape().end());
  } else if (partial.tensor.shape !=
             std::vector<int64_t>(chunk.shape().begin(), chunk.shape().end())) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": shape changed between chunks"));
  }
  if (chunk.offset_bytes() != partial.received_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected offset ", partial.received_bytes,
                     ", got ", chunk.offset_bytes()));
  }
  if (partial.received_bytes + static_cast<int64_t>(chunk.data().size()) >
      total) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": chunk runs past total_bytes ", total));
  }
  if (chunk.data().empty()) return absl::OkStatus();
  const int64_t end = partial.received_bytes + int64_t(chunk.data().size());
  partial.tensor.data.resize(size_t((end + int64_t(sizeof(float)) - 1) / int64_t(sizeof(float))));
  std::memcpy(reinterpret_cast<char*>(partial.tensor.data.data()) + partial.received_bytes,
              chunk.data().data(), chunk.data().size());
  partial.received_bytes = end;
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, HostTensor>> ChunkAssembler::Finish() {
  std::map<std::string, HostTensor> out;
  for (auto& [name, partial] : partial_) {
    const int64_t total = partial.tensor.num_elements() * sizeof(float);
    partial.tensor.data.resize(size_t(partial.tensor.num_elements()));  // a zero-size tensor
    if (partial.received_bytes != total) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' is incomplete: received ",
                       partial.received_bytes, " of ", total, " bytes"));
    }
    out.emplace(name, std::move(partial.tensor));
  }
  partial_.clear();
  return out;
}

absl::StatusOr<std::map<std::string, HostTensor>> AssembleChunks(
    const std::vector<TensorChunk>& chunks) {
  ChunkAssembler assembler;
  for (const TensorChunk& chunk : chunks) {
    if (absl::Status s = assembler.Add(chunk); !s.ok()) return s;
  }
  return assembler.Finish();
}

int64_t ChunkBytes(const std::vector<TensorChunk>& chunks) {
  int64_t bytes = 0;
  for (const TensorChunk& c : chunks) bytes += int64_t(c.data().size());
  return bytes;
}

}  // namespace hpt
