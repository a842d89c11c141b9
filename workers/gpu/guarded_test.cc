#include "workers/gpu/guarded.h"

#include <string>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

// Guarded(`where`) over a step that LibTorch fails with `message`.
absl::StatusOr<int> FailedInLibTorch(const char* where, const std::string& message) {
  return Guarded(where, [&]() -> absl::StatusOr<int> {
    TORCH_CHECK(false, message);
    return 1;
  });
}

// Out of memory, on the device or the host, is RESOURCE_EXHAUSTED with the
// fix; any other failure INTERNAL with LibTorch's words; a success passes.
TEST(GuardedTest, WhatLibTorchThrowsBecomesAStatus) {
  absl::StatusOr<int> device = Guarded("forward", []() -> absl::StatusOr<int> {
    TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory. Tried to allocate 2.00 GiB");
    return 1;
  });
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(device.status().message(),
              HasSubstr("forward: the device ran out of memory: lower training.batch_size, or "
                        "the model's size (model.d_model, model.num_layers) (LibTorch: CUDA out "
                        "of memory. Tried to allocate 2.00 GiB)"));
  absl::StatusOr<int> host =
      Guarded("backward", []() -> absl::StatusOr<int> { throw std::bad_alloc(); });
  EXPECT_EQ(host.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(host.status().message(),
              HasSubstr("backward: the worker's host ran out of memory: lower "
                        "training.batch_size"));
  absl::StatusOr<int> cpu = FailedInLibTorch(
      "forward", "DefaultCPUAllocator: not enough memory: you tried to allocate 9 bytes.");
  EXPECT_EQ(cpu.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(cpu.status().message(),
              HasSubstr("forward: the worker's host ran out of memory: lower training.batch_size"));
  absl::StatusOr<int> shape = FailedInLibTorch("update", "shapes [2, 3] and [4] do not match");
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(shape.status().message(),
              HasSubstr("update failed in LibTorch: shapes [2, 3] and [4] do not match"));
  EXPECT_EQ(*Guarded("load", []() -> absl::StatusOr<int> { return 7; }), 7);
}

}  // namespace
}  // namespace hpt
