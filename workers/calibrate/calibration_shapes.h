// The products hpt_calibrate times (workers/calibrate/device_calibration.cc), listed
// once: the calibration's sample. What checks the calibrated model out of
// sample (benchmarks/whole_step_holdout_test.cc, kernel_holdout) is held
// to shapes outside it. No LibTorch here.
#ifndef HPT_WORKERS_CALIBRATION_SHAPES_H_
#define HPT_WORKERS_CALIBRATION_SHAPES_H_

#include <array>
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
  }
  return out;
}

}  // namespace hpt

#endif  // HPT_WORKERS_CALIBRATION_SHAPES_H_
