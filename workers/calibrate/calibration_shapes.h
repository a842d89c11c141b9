// The products hpt_calibrate times (workers/calibrate/device_calibration.cc), listed
// once: the calibration's sample. What checks the calibrated model out of
// sample (benchmarks/whole_step_holdout_test.cc, kernel_holdout) is held
// to shapes outside it. No LibTorch here.
#ifndef HPT_WORKERS_CALIBRATION_SHAPES_H_
#define HPT_WORKERS_CALIBRATION_SHAPES_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace hpt {

// The product grids' axis: every [m x k] x [k x n] with m, k and n on it,
// in each layout (plain, x W^T, A^T x) and streamed from memory.
inline std::vector<int64_t> GemmGridAxis(bool quick) {
  return quick ? std::vector<int64_t>{8, 32, 128, 512, 2048}
               : std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512, 1024, 2048};
}

// The size table's products, [m x n] x [n x n], m and n from these.
inline std::vector<int64_t> GemmRateRows(bool quick) {
  return quick ? std::vector<int64_t>{16, 128, 1024}
               : std::vector<int64_t>{1, 8, 32, 128, 512, 2048, 8192};
}
inline std::vector<int64_t> GemmRateWidths(bool quick) {
  return quick ? std::vector<int64_t>{64, 512} : std::vector<int64_t>{32, 128, 512, 2048};
}

// A batch of products (bmm): one product's m, k and n, each from this
// axis, in a batch that fills the device: at least BatchedCalibrationFlops
// FLOPs and, on CUDA, at least kBatchedCalibrationResults results (m x n
// over the batch: 1,024 output tiles of 128 x 128, several waves over an
// H200's 132 SMs however large each product is), its two operands at
// most kMaxBatchedOperandBytes, and at most kMaxBatch products. FLOPs
// alone were not enough: a batch of 2^30 FLOPs of 1024 x 1024 x 128
// products is four of them, 32 tiles on 132 SMs, and the H200's grid
// rated such products at 30 TFLOP/s where NeuSight's published H100
// kernels ran full batches of them at about 53 (docs/cost-model.md).
inline std::vector<int64_t> BatchedGridAxis(bool quick) {
  return quick ? std::vector<int64_t>{8, 32, 128}
               : std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512, 1024};
}
inline double BatchedCalibrationFlops(bool quick, bool cuda) {
  return quick ? 1 << 22 : cuda ? 1 << 30 : 1 << 26;
}
inline constexpr double kBatchedCalibrationResults = double(1 << 24);
inline constexpr double kMaxBatchedOperandBytes = double(1LL << 31);
inline constexpr int64_t kMaxBatch = 1 << 20;

// The products in one timed batch of m x k x n fp32 products.
inline int64_t BatchOf(int64_t m, int64_t k, int64_t n, bool quick, bool cuda) {
  const double each = 2.0 * double(m) * double(k) * double(n);
  double want = BatchedCalibrationFlops(quick, cuda) / each;
  if (cuda && !quick) want = std::max(want, kBatchedCalibrationResults / (double(m) * double(n)));
  const double operand_bytes = 4.0 * (double(m) * double(k) + double(k) * double(n));
  const double most =
      std::min(std::floor(kMaxBatchedOperandBytes / operand_bytes), double(kMaxBatch));
  return std::max<int64_t>(2, int64_t(std::min(std::ceil(want), most)));
}

// The row kernels (layer norm, softmax): rows from a few tokens to a
// large batch's, widths over the presets' d_model and attention's key
// lengths.
inline std::vector<int64_t> RowKernelRows(bool quick) {
  return quick ? std::vector<int64_t>{16, 256, 4096}
               : std::vector<int64_t>{8, 32, 128, 512, 2048, 8192, 32768, 131072};
}
inline std::vector<int64_t> RowKernelWidths(bool quick) {
  return quick ? std::vector<int64_t>{32, 256, 2048}
               : std::vector<int64_t>{16, 32, 64, 128, 256, 512, 1024, 2048};
}

// The bf16 peak's square products, n x n x n.
inline std::vector<int64_t> Bf16Sizes(bool quick, bool cuda) {
  return quick  ? std::vector<int64_t>{512, 1024}
         : cuda ? std::vector<int64_t>{2048, 4096, 8192}
                : std::vector<int64_t>{1024, 2048};
}

// Every product shape (m, k, n) above, quick and full, on a CPU and CUDA.
inline std::vector<std::array<int64_t, 3>> CalibrationProducts() {
  std::vector<std::array<int64_t, 3>> out;
  for (bool quick : {false, true}) {
    const std::vector<int64_t> axis = GemmGridAxis(quick);
    for (int64_t m : axis) {
      for (int64_t k : axis) {
        for (int64_t n : axis) out.push_back({m, k, n});
      }
    }
    for (int64_t m : GemmRateRows(quick)) {
      for (int64_t n : GemmRateWidths(quick)) out.push_back({m, n, n});
    }
    for (bool cuda : {false, true}) {
      for (int64_t n : Bf16Sizes(quick, cuda)) out.push_back({n, n, n});
    }
    for (int64_t m : BatchedGridAxis(quick)) {  // one product of each batch
      for (int64_t k : BatchedGridAxis(quick)) {
        for (int64_t n : BatchedGridAxis(quick)) out.push_back({m, k, n});
      }
    }
  }
  return out;
}

}  // namespace hpt

#endif  // HPT_WORKERS_CALIBRATION_SHAPES_H_
