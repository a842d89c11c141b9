#include "devices/cpu_kernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>

namespace hpt {
namespace cpu_kernels {

HPT_VECTOR_CLONES void FillMaskRange(
    float* mask, int64_t begin, int64_t end, uint32_t k0, uint32_t k1, uint32_t threshold,
    float keep) {
  for (int64_t e = begin; e < end; ++e) {
    uint32_t h = static_cast<uint32_t>(e) * 0x9E3779B1u ^ k0;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h += k1;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    mask[e] = h < threshold ? 0.0f : keep;
  }
}

}  // namespace cpu_kernels

void Int8Gemm(int64_t m, int64_t n, int64_t k, const int8_t* a, const int8_t* b,
              bool b_transposed, int32_t* c) {
  if (m == 0 || n == 0) return;
  const auto i8 = at::TensorOptions().dtype(at::kChar);
  // from_blob wraps without copying; the operands are only read.
  at::Tensor ta = at::from_blob(const_cast<int8_t*>(a), {m, k}, i8);
  at::Tensor tb = b_transposed
                      ? at::from_blob(const_cast<int8_t*>(b), {n, k}, i8).t()
                      : at::from_blob(const_cast<int8_t*>(b), {k, n}, i8);
  at::Tensor tc = at::from_blob(c, {m, n}, at::TensorOptions().dtype(at::kInt));
  at::_int_mm_out(tc, ta, tb);
}

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  if (n < grain || at::get_num_threads() == 1) {
    body(0, n);
    return;
  }
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) { body(begin, end); });
}

void FillDropoutMask(float* mask, int64_t n, double p, uint64_t seed) {
  const auto k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const auto threshold = static_cast<uint32_t>(std::ldexp(p, 32));
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  ParallelFor(n, 1 << 16, [&](int64_t begin, int64_t end) {
    cpu_kernels::FillMaskRange(mask, begin, end, k0, k1, threshold, keep);
  });
}

}  // namespace hpt
