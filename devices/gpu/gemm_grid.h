// Achieved GEMM rates measured over a grid of product shapes, and the rate
// of any shape read off it. A product's rate depends on each of its three
// dimensions, not only on its FLOPs: on a CPU with a BLAS, an [m x k] x
// [k x n] product with few rows (m) pays to pack its k x n operand for few
// FLOPs, and one with a short inner dimension (k, a weight gradient over
// few tokens) loads and stores its result tile for every few FLOPs. Measured
// on this repository's 2-core CI machine (session 18, torch 2.12 CPU): a
// wind step's 57 x 512 x 1536 product runs at 148 GFLOP/s and its
// 1536 x 57 x 512 weight gradient, of the same FLOPs, at 71.
//
//   GemmGrid grid = ...;                         // hpt_calibrate measures it
//   double flops_per_s = grid.Rate(GemmShape{57, 1536, 512});  // m, n, k
//   std::string text = GemmGridText(grid);       // "8x8x8:1.2e9,8x8x32:..."
#ifndef HPT_DEVICES_GPU_GEMM_GRID_H_
#define HPT_DEVICES_GPU_GEMM_GRID_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/gemm_shape.h"

namespace hpt {

// Rates at every combination of the axes' values (a full grid).
class GemmGrid {
 public:
  GemmGrid() = default;
  // Each axis sorted ascending and distinct; `rates` (FLOP/s) in m-major,
  // then k, then n order, one per combination. INVALID_ARGUMENT otherwise.
  static absl::StatusOr<GemmGrid> Make(std::vector<int64_t> m, std::vector<int64_t> k,
                                       std::vector<int64_t> n, std::vector<double> rates);

  bool empty() const { return rates_.empty(); }
  // The rate at `shape` (of a batched product: each one's): trilinear in
  // the logarithms of the dimensions and of the rate, held at the grid's
  // edges (no extrapolation).
  double Rate(const GemmShape& shape) const;
  // The grid's highest rate: what its products reach once large.
  double BestRate() const { return best_rate_; }
  // Sets every rate above `cap` to it; returns how many were.
  int CapRates(double cap);

  const std::vector<int64_t>& m() const { return m_; }
  const std::vector<int64_t>& k() const { return k_; }
  const std::vector<int64_t>& n() const { return n_; }
  double RateAt(size_t i, size_t j, size_t l) const {
    return rates_[(i * k_.size() + j) * n_.size() + l];
  }

 private:
  std::vector<int64_t> m_, k_, n_;
  std::vector<double> rates_;
  double best_rate_ = 0;  // of rates_, found once by Make
};

// "MxKxN:rate,..." in the grid's order, and back. A missing or repeated
// combination, or a bad number, is INVALID_ARGUMENT naming the entry.
std::string GemmGridText(const GemmGrid& grid);
absl::StatusOr<GemmGrid> ParseGemmGrid(absl::string_view text);

}  // namespace hpt

#endif  // HPT_DEVICES_GPU_GEMM_GRID_H_
