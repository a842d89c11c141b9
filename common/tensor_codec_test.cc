#include "common/tensor_codec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

TEST(TensorCodecTest, RoundTripsThroughProto) {
  HostTensor t({2, 3});
  for (int i = 0; i < 6; ++i) t.data[i] = i * 0.5f - 1.0f;
  Tensor proto;
  ToProto(t, "x", &proto);
  EXPECT_EQ(proto.data().size(), 24u);
  auto back = FromProto(proto, "req.x");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape, t.shape);
  EXPECT_EQ(back->data, t.data);
}

TEST(TensorCodecTest, MovingFormsHandOverTheBytesWithoutCopying) {
  HostTensor t({3, 5});
  for (int i = 0; i < 15; ++i) t.data[i] = i * 0.25f - 2.0f;
  const HostTensor expected = t;
  const float* buffer = t.data.data();
  Tensor proto;
  ToProto(std::move(t), "x", &proto);
  EXPECT_TRUE(t.data.empty());
  EXPECT_EQ(proto.name(), "x");
  EXPECT_EQ(reinterpret_cast<const float*>(proto.data().data()), buffer);  // the same bytes
  auto back = FromProto(std::move(proto), "req.x");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(proto.data().empty());
  EXPECT_EQ(back->data.data(), buffer);
  EXPECT_EQ(back->shape, expected.shape);
  EXPECT_EQ(back->data, expected.data);
  // A bad message is refused, named, and left as it was.
  Tensor bad;
  bad.set_dtype(FLOAT32);
  bad.add_shape(4);
  bad.set_data(std::string(12, '\1'));
  auto refused = FromProto(std::move(bad), "ForwardRequest.values 'h'");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("ForwardRequest.values 'h'.data has 12 bytes"));
  EXPECT_EQ(bad.data().size(), 12u);
}

TEST(TensorCodecTest, WrongByteCountNamesTheField) {
  Tensor proto;
  proto.set_dtype(FLOAT32);
  proto.add_shape(4);
  proto.set_data(std::string(12, '\0'));
  auto back = FromProto(proto, "ForwardRequest.inputs");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(back.status().message(),
              HasSubstr("ForwardRequest.inputs.data has 12 bytes"));
}

TEST(TensorCodecTest, ChunksReassembleAcrossUnevenBoundaries) {
  HostTensor t({1000, 3});
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data[i] = i * 1.25f;
  // 998 bytes is not a multiple of 4: chunks are cut to 996.
  std::vector<TensorChunk> chunks =
      SplitIntoChunks("w", t.shape, t.data.data(), 998);
  ASSERT_EQ(chunks.size(), 13u);  // 12000 bytes / 996 rounded up
  ChunkAssembler assembler;
  for (const TensorChunk& c : chunks) ASSERT_TRUE(assembler.Add(c).ok());
  auto tensors = assembler.Finish();
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  EXPECT_EQ(tensors->at("w").data, t.data);
}

TEST(TensorCodecTest, MissingChunkIsReported) {
  HostTensor t({100});
  std::vector<TensorChunk> chunks =
      SplitIntoChunks("w", t.shape, t.data.data(), 100);
  ChunkAssembler assembler;
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  absl::Status skipped = assembler.Add(chunks[2]);
  EXPECT_THAT(skipped.message(), HasSubstr("expected offset 100, got 200"));
  ChunkAssembler partial;
  ASSERT_TRUE(partial.Add(chunks[0]).ok());
  auto done = partial.Finish();
  ASSERT_FALSE(done.ok());
  EXPECT_THAT(done.status().message(), HasSubstr("received 100 of 400"));
}

TEST(TensorCodecTest, EmptyTensorIsOneChunk) {
  std::vector<TensorChunk> chunks = SplitIntoChunks("e", {0, 5}, nullptr, 0);
  ASSERT_EQ(chunks.size(), 1u);
  ChunkAssembler assembler;
  ASSERT_TRUE(assembler.Add(chunks[0]).ok());
  auto tensors = assembler.Finish();
  ASSERT_TRUE(tensors.ok());
  EXPECT_EQ(tensors->at("e").num_elements(), 0);
}

}  // namespace
}  // namespace hpt

namespace hpt {
namespace {

TEST(ChunkAssemblerBoundsTest, DeclaredShapesAreBoundedAndAllocateOnlyWhatArrives) {
  // A shape whose product overflows int64 is refused, not wrapped.
  TensorChunk overflow;
  overflow.set_name("w");
  overflow.set_dtype(FLOAT32);
  for (int i = 0; i < 4; ++i) overflow.add_shape(int64_t{1} << 20);
  overflow.set_total_bytes(0);
  ChunkAssembler a;
  absl::Status s = a.Add(overflow);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("is over 1073741824 elements"));

  // 2^28 floats (1 GiB) declared by an 8-byte chunk: accepted as a start,
  // then reported incomplete; nothing near 1 GiB was allocated for it (a
  // ASan/RSS-limited fuzzer run would fail otherwise).
  TensorChunk big;
  big.set_name("w");
  big.set_dtype(FLOAT32);
  big.add_shape(int64_t{1} << 28);
  big.set_total_bytes(int64_t{1} << 30);
  big.set_data(std::string(8, '\0'));
  ChunkAssembler b;
  ASSERT_TRUE(b.Add(big).ok());
  auto finished = b.Finish();
  ASSERT_FALSE(finished.ok());
  EXPECT_THAT(std::string(finished.status().message()),
              ::testing::HasSubstr("received 8 of 1073741824 bytes"));
}

}  // namespace
}  // namespace hpt
