#include "hptctl/npy_file.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/output_file.h"
#include "common/user_file.h"

namespace hpt {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// The value of 'key' in the header's Python dict literal, up to the next
// top-level comma: "'<f4'", "False", "(2, 3)".
std::string DictValue(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  size_t begin = header.find(':', at);
  if (begin == std::string::npos) return "";
  ++begin;
  int depth = 0;
  size_t end = begin;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' && depth == 0) || c == '}') break;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(begin, end - begin)));
}

}  // namespace

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  return ReadUserFile(path, kMaxArrayFileBytes);
}

absl::StatusOr<HostTensor> ReadNpy(const std::string& path) {
  absl::StatusOr<std::string> read = ReadFileBytes(path);
  if (!read.ok()) return read.status();
  const std::string& bytes = *read;
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "': ", what));
  };
  if (bytes.compare(0, 4, "PK\x03\x04") == 0) {
    return bad("a .npz archive, not one array: save the input with numpy.save('x.npy', x)");
  }
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic) != 0) {
    return bad(
        "not a .npy file (no \\x93NUMPY magic): save the input with "
        "numpy.save('x.npy', x.astype('float32'))");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_length = 0, header_begin = 0;
  if (major == 1) {
    header_length = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_begin = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    for (int i = 11; i >= 8; --i) header_length = (header_length << 8) | static_cast<unsigned char>(bytes[i]);
    header_begin = 12;
  } else {
    return bad(absl::StrCat(".npy version ", major, " is not supported (1, 2 or 3)"));
  }
  if (header_begin + header_length > bytes.size()) return bad("its header runs past the file's end");
  const std::string header = bytes.substr(header_begin, header_length);
  const std::string descr = DictValue(header, "descr");
  if (descr != "'<f4'" && descr != "'<f8'") {
    return bad("'descr' must be '<f4' (float32) or '<f8' (float64), got " + descr.substr(0, 16));
  }
  if (DictValue(header, "fortran_order") != "False") {
    return bad("'fortran_order' must be False (save a C-ordered array: np.ascontiguousarray)");
  }
  const std::string shape_value = DictValue(header, "shape");
  absl::string_view shape_text = shape_value;
  if (!absl::ConsumePrefix(&shape_text, "(") || !absl::ConsumeSuffix(&shape_text, ")")) {
    return bad("'shape' is not a tuple");
  }
  std::vector<int64_t> shape;
  for (absl::string_view part : absl::StrSplit(shape_text, ',', absl::SkipWhitespace())) {
    int64_t d = 0;
    if (!absl::SimpleAtoi(part, &d) || d < 0) return bad("'shape' holds a value that is not a size");
    shape.push_back(d);
  }
  HostTensor tensor(shape);
  const bool doubles = descr == "'<f8'";
  const size_t data_begin = header_begin + header_length;
  const size_t want = size_t(tensor.num_elements()) * (doubles ? 8 : 4);
  if (bytes.size() - data_begin != want) {
    return bad(absl::StrCat("'shape' (", absl::StrJoin(shape, ", "), ") needs ", want, " bytes of data, the file has ",
                            bytes.size() - data_begin));
  }
  if (doubles) {
    for (size_t i = 0; i < tensor.data.size(); ++i) {
      double v;
      std::memcpy(&v, bytes.data() + data_begin + 8 * i, 8);
      tensor.data[i] = float(v);
    }
  } else {
    std::memcpy(tensor.data.data(), bytes.data() + data_begin, want);
  }
  return tensor;
}

absl::Status WriteNpy(const HostTensor& tensor, const std::string& path) {
  std::string shape = absl::StrJoin(tensor.shape, ", ");
  if (tensor.shape.size() == 1) shape += ",";
  std::string header =
      absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", shape, "), }");
  // Magic, version and length take 10 bytes; the header ends in a newline
  // and pads the data to 64-byte alignment, as numpy writes it.
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, 6);
  bytes += char(1);
  bytes += char(0);
  bytes += char(header.size() & 0xff);
  bytes += char(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(tensor.data.data()), tensor.num_bytes());
  return WriteOutputFile(path, bytes);
}

}  // namespace hpt
