// The shape of one matrix product, [m x k] x [k x n]: what the systolic
// array's cycle model simulates (SCALE-Sim's M, N, K) and what a GPU or
// CPU profile's measured GEMM grid is read at. Braces take SCALE-Sim's
// order: GemmShape{m, n, k}.
#ifndef HPT_DEVICES_GEMM_SHAPE_H_
#define HPT_DEVICES_GEMM_SHAPE_H_

#include <cstdint>
#include <tuple>

namespace hpt {

struct GemmShape {
  int64_t m = 0;  // input rows
  int64_t n = 0;  // weight columns (outputs)
  int64_t k = 0;  // reduction
  // How the operands lie in memory: the first read transposed (stored k x
  // m: a weight gradient's g^T), the second (stored n x k: a linear
  // layer's x W^T). A CPU's GEMM runs some layouts slower than others.
  bool a_transposed = false, b_transposed = false;
  // Zero anywhere: unknown (a kernel that is no product, or not recorded).
  bool known() const { return m > 0 && k > 0 && n > 0; }
  bool operator==(const GemmShape& o) const {
    return m == o.m && n == o.n && k == o.k && a_transposed == o.a_transposed &&
           b_transposed == o.b_transposed;
  }
  bool operator<(const GemmShape& o) const {
    return std::tie(m, k, n, a_transposed, b_transposed) <
           std::tie(o.m, o.k, o.n, o.a_transposed, o.b_transposed);
  }
};

}  // namespace hpt

#endif  // HPT_DEVICES_GEMM_SHAPE_H_
