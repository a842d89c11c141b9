#include "hptctl/safetensors_file.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_text.h"
#include "common/output_file.h"
#include "hptctl/npy_file.h"

namespace hpt {
namespace {


void PutLittleEndian64(uint64_t value, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(char((value >> (8 * i)) & 0xff));
}

}  // namespace

absl::Status WriteSafetensors(const std::map<std::string, HostTensor>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              const std::string& path) {
  std::vector<std::string> entries;
  if (!metadata.empty()) {
    std::vector<std::string> pairs;
    for (const auto& [key, value] : metadata) pairs.push_back(JsonString(key) + ":" + JsonString(value));
    entries.push_back(absl::StrCat("\"__metadata__\":{", absl::StrJoin(pairs, ","), "}"));
  }
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const uint64_t bytes = uint64_t(tensor.num_bytes());
    entries.push_back(absl::StrCat(JsonString(name), ":{\"dtype\":\"F32\",\"shape\":[",
                                   absl::StrJoin(tensor.shape, ","), "],\"data_offsets\":[", offset,
                                   ",", offset + bytes, "]}"));
    offset += bytes;
  }
  std::string header = absl::StrCat("{", absl::StrJoin(entries, ","), "}");
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string length;
  PutLittleEndian64(header.size(), &length);
  std::string bytes = length + header;
  for (const auto& [name, tensor] : tensors) {
    // x86-64 and aarch64 are little-endian, as the format wants.
    bytes.append(reinterpret_cast<const char*>(tensor.data.data()), tensor.num_bytes());
  }
  return WriteOutputFile(path, bytes);
}

absl::StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path) {
  absl::StatusOr<std::string> read = ReadFileBytes(path);
  if (!read.ok()) return read.status();
  const std::string& bytes = *read;
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is not a safetensors file: ", what));
  };
  if (bytes.size() < 8) return bad("shorter than its 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  if (n > bytes.size() - 8) return bad(absl::StrCat("header length ", n, " runs past the file's end"));
  google::protobuf::Struct header;
  if (!google::protobuf::util::JsonStringToMessage(bytes.substr(8, n), &header).ok()) {
    return bad("its header is not a JSON object");
  }
  const size_t data_begin = 8 + n;
  SafetensorsContents contents;
  for (const auto& [name, value] : header.fields()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : value.struct_value().fields()) contents.metadata[k] = v.string_value();
      continue;
    }
    const auto& f = value.struct_value().fields();
    if (!f.count("dtype") || f.at("dtype").string_value() != "F32") {
      return bad(absl::StrCat("tensor '", name, "' is not F32"));
    }
    if (!f.count("shape") || !f.count("data_offsets") ||
        f.at("data_offsets").list_value().values_size() != 2) {
      return bad(absl::StrCat("tensor '", name, "' lacks its shape or data_offsets"));
    }
    std::vector<int64_t> shape;
    for (const auto& d : f.at("shape").list_value().values()) shape.push_back(int64_t(d.number_value()));
    HostTensor tensor(shape);
    const auto& offsets = f.at("data_offsets").list_value().values();
    const uint64_t begin = uint64_t(offsets[0].number_value()), end = uint64_t(offsets[1].number_value());
    if (end < begin || end - begin != uint64_t(tensor.num_bytes()) || data_begin + end > bytes.size()) {
      return bad(absl::StrCat("tensor '", name, "': its data_offsets do not fit its shape or the file"));
    }
    std::memcpy(tensor.data.data(), bytes.data() + data_begin + begin, end - begin);
    contents.tensors[name] = std::move(tensor);
  }
  return contents;
}

}  // namespace hpt
