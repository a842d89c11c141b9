#include "devices/cpu_kernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>

namespace hpt {
namespace cpu_kernels {

namespace {
// Element e's draw: a 32-bit hash of (e, k0, k1).
__attribute__((always_inline)) inline uint32_t MaskHash(uint32_t e, uint32_t k0, uint32_t k1) {
  uint32_t h = e * 0x9E3779B1u ^ k0;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h += k1;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}
}  // namespace

HPT_VECTOR_CLONES void FillMaskRange(
    float* mask, int64_t begin, int64_t end, uint32_t k0, uint32_t k1, uint32_t threshold,
    float keep) {
  for (int64_t e = begin; e < end; ++e) {
    mask[e] = MaskHash(static_cast<uint32_t>(e), k0, k1) < threshold ? 0.0f : keep;
  }
}

HPT_VECTOR_CLONES void DropoutRange(const float* x, float* y, int64_t first, int64_t begin,
                                    int64_t end, uint32_t k0, uint32_t k1,
                                    uint32_t threshold, float keep) {
  for (int64_t j = begin; j < end; ++j) {
    const uint32_t h = MaskHash(static_cast<uint32_t>(first + j), k0, k1);
    y[j] = h < threshold ? 0.0f : x[j] * keep;
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

void ApplyDropout(const float* x, float* y, int64_t n, double p, uint64_t seed,
                  int64_t first, bool parallel) {
  const auto k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const auto threshold = static_cast<uint32_t>(std::ldexp(p, 32));
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  if (!parallel) {
    cpu_kernels::DropoutRange(x, y, first, 0, n, k0, k1, threshold, keep);
    return;
  }
  ParallelFor(n, 1 << 16, [&](int64_t begin, int64_t end) {
    cpu_kernels::DropoutRange(x, y, first, begin, end, k0, k1, threshold, keep);
  });
}

}  // namespace hpt
