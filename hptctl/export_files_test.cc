#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "hptctl/npy_file.h"
#include "hptctl/safetensors_file.h"

namespace hpt {
namespace {

HostTensor Ramp(std::vector<int64_t> shape) {
  HostTensor t(std::move(shape));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.5f * float(i) - 3.25f;
  return t;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(SafetensorsTest, RoundTripsTensorsAndMetadata) {
  const std::string path = ::testing::TempDir() + "/w.safetensors";
  std::map<std::string, HostTensor> tensors = {{"layers.0.ff1.weight", Ramp({3, 5})},
                                               {"head.bias", Ramp({1})}};
  ASSERT_TRUE(WriteSafetensors(tensors, {{"format", "pt"}, {"note", "a \"quoted\"\nline"}}, path).ok());
  absl::StatusOr<SafetensorsContents> read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->tensors.size(), 2u);
  EXPECT_EQ(read->tensors["layers.0.ff1.weight"].shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(read->tensors["layers.0.ff1.weight"].data[14], 0.5f * 14 - 3.25f);
  EXPECT_EQ(read->tensors["head.bias"].data[0], -3.25f);
  EXPECT_EQ(read->metadata["note"], "a \"quoted\"\nline");
  // The data starts 8-byte aligned: 8 + header length is a multiple of 8.
  std::ifstream in(path, std::ios::binary);
  unsigned char length[8];
  in.read(reinterpret_cast<char*>(length), 8);
  EXPECT_EQ(length[0] % 8, 0);
}

TEST(SafetensorsTest, BrokenFilesAreNamedNotQuoted) {
  const std::string path = ::testing::TempDir() + "/bad.safetensors";
  WriteBytes(path, std::string("\xff\x00\x00\x00\x00\x00\x00\x00secret", 14));
  absl::StatusOr<SafetensorsContents> read = ReadSafetensors(path);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("header length 255 runs past the file's end"), std::string::npos);
  EXPECT_EQ(read.status().message().find("secret"), std::string::npos);
}

TEST(NpyTest, RoundTripsFloat32AndReadsFloat64) {
  const std::string path = ::testing::TempDir() + "/x.npy";
  ASSERT_TRUE(WriteNpy(Ramp({2, 3, 4}), path).ok());
  absl::StatusOr<HostTensor> read = ReadNpy(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(read->data[23], 0.5f * 23 - 3.25f);
  // The header as numpy 2 writes it for np.save(p, np.arange(3.0)).
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  for (double v : {0.0, 1.0, 2.5}) bytes.append(reinterpret_cast<const char*>(&v), 8);
  WriteBytes(path, bytes);
  read = ReadNpy(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(read->data[2], 2.5f);
}

TEST(NpyTest, BadHeadersNameTheField) {
  const std::string path = ::testing::TempDir() + "/bad.npy";
  auto with_header = [&](const std::string& dict, size_t data_bytes) {
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + '\0' + dict;
    bytes.append(data_bytes, '\0');
    WriteBytes(path, bytes);
    absl::StatusOr<HostTensor> read = ReadNpy(path);
    return read.ok() ? std::string("ok") : std::string(read.status().message());
  };
  EXPECT_NE(with_header("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", 16).find("'descr' must be"),
            std::string::npos);
  EXPECT_NE(with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16)
                .find("'fortran_order' must be False"),
            std::string::npos);
  EXPECT_NE(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 16)
                .find("'shape' (2, 3) needs 24 bytes of data, the file has 16"),
            std::string::npos);
  WriteBytes(path, "a,b,c\n1,2,3\n");
  EXPECT_EQ(ReadNpy(path).status().message(),
            "'" + path +
                "': not a .npy file (no \\x93NUMPY magic): save the input with "
                "numpy.save('x.npy', x.astype('float32'))");
  WriteBytes(path, std::string("PK\x03\x04", 4) + "x.npy and more");
  EXPECT_EQ(
      ReadNpy(path).status().message(),
      "'" + path + "': a .npz archive, not one array: save the input with numpy.save('x.npy', x)");
}

}  // namespace
}  // namespace hpt
