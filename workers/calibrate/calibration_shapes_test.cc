#include "workers/calibrate/calibration_shapes.h"

#include "devices/gpu/kernel_cost.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

// A timed batch fills the device: enough FLOPs, and on CUDA enough results
// that even large products give many waves of tiles, within the memory cap.
TEST(CalibrationShapesTest, ABatchFillsTheDeviceWithinItsMemory) {
  // 1024 x 1024 x 128 products: 2^30 FLOPs would be 4 of them (32 tiles of
  // 128 x 128); 2^24 results take 128.
  EXPECT_EQ(BatchOf(1024, 1024, 128, /*quick=*/false, /*cuda=*/true), 128);
  // 2^26 FLOPs on a CPU: a quarter of one product, so the least batch.
  EXPECT_EQ(BatchOf(1024, 1024, 128, /*quick=*/false, /*cuda=*/false), 2);
  // Small products: the FLOPs ask for more than the results do.
  EXPECT_EQ(BatchOf(8, 8, 8, false, true), 1 << 20);  // kMaxBatch
  // 8 x 1024 x 8: 2^24 results would be 2^18 products, 17 GB of operands;
  // the cap keeps 2 GiB of them.
  EXPECT_EQ(BatchOf(8, 1024, 8, false, true), (int64_t{1} << 31) / (4 * 2 * 8 * 1024));
  for (int64_t m : BatchedGridAxis(false)) {
    for (int64_t k : BatchedGridAxis(false)) {
      for (int64_t n : BatchedGridAxis(false)) {
        const double batch = double(BatchOf(m, k, n, false, true));
        EXPECT_LE(batch * 4.0 * double(m * k + k * n), kMaxBatchedOperandBytes) << m << k << n;
        EXPECT_GE(batch * 2.0 * double(m * k * n), BatchedCalibrationFlops(false, true) / 2)
            << m << "x" << k << "x" << n;
      }
    }
  }
  EXPECT_EQ(BatchOf(8, 8, 8, /*quick=*/true, true), (1 << 22) / 1024);
}

// The softmax grid is read as rows ATen's forward reads once; the model
// doubles it for rows read three times, so no measured width may be one.
TEST(CalibrationShapesTest, TheSoftmaxGridsWidthsAreReadOnce) {
  for (bool quick : {false, true}) {
    for (int64_t width : RowKernelWidths(quick)) {
      EXPECT_TRUE(SoftmaxReadsRowOnce(width, 4)) << width;
    }
  }
}

}  // namespace
}  // namespace hpt
