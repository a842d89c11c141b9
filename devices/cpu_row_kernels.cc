// The simulated devices' element-wise row kernels (cpu_kernels.h), each
// compiled for AVX-512, AVX2 and the baseline (HPT_VECTOR_CLONES). Built
// with -O3 and OpenMP's simd pragmas (no runtime) so the loops vectorise,
// reductions included. No LibTorch here.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "devices/cpu_kernels.h"

namespace hpt {
namespace {

// e^x in single precision, vectorisable: x = n ln 2 + r with |r| <= ln 2 / 2
// (ln 2 split in two for an exact product), e^r from Cephes' expf
// polynomial (S. Moshier, Cephes Math Library, expf.c), 2^n put into the
// exponent bits. Within 1 ulp of e^x over [-87, 0], the range softmax uses
// (0.99 ulp worst, 8.3e-8 relative, against double exp at 2e7 points).
// Inputs are clamped to [-87.3, 88.7], where the result stays a normal
// float.
__attribute__((always_inline)) inline float ExpF(float x) {
  x = std::min(88.7f, std::max(-87.3f, x));
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;
  r -= n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return e * scale;
}
}  // namespace

HPT_VECTOR_CLONES void Relu(float* y, int64_t n) {
  for (int64_t e = 0; e < n; ++e) y[e] = y[e] > 0.0f ? y[e] : 0.0f;
}
// g where x > 0, else 0.
HPT_VECTOR_CLONES void ReluBackward(float* g, const float* x, int64_t n) {
  for (int64_t e = 0; e < n; ++e) g[e] = x[e] > 0.0f ? g[e] : 0.0f;
}
HPT_VECTOR_CLONES void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t e = 0; e < n; ++e) y[e] += x[e];
}
// One row of LayerNorm in place: y = (y - mean) / sigma * gamma + beta.
// Returns {mean, 1 / sigma}; sums in double.
HPT_VECTOR_CLONES std::pair<float, float> LayerNormRow(float* y, const float* gamma,
                                                       const float* beta, int64_t cols,
                                                       double eps) {
  double mean = 0;
#pragma omp simd reduction(+ : mean)
  for (int64_t c = 0; c < cols; ++c) mean += y[c];
  mean /= double(cols);
  double var = 0;
#pragma omp simd reduction(+ : var)
  for (int64_t c = 0; c < cols; ++c) var += (y[c] - mean) * (y[c] - mean);
  var /= double(cols);
  const float rstd = float(1.0 / std::sqrt(var + eps));
  const float m = float(mean);
  for (int64_t c = 0; c < cols; ++c) y[c] = (y[c] - m) * rstd * gamma[c] + beta[c];
  return {m, rstd};
}
// One row's LayerNorm input gradient from its output gradient g, with x-hat
// rebuilt from the row's input x and its statistics (written to `xhat`).
HPT_VECTOR_CLONES void LayerNormBackwardRow(const float* g, const float* gamma,
                                            const float* x, float mean, float rstd,
                                            int64_t cols, float* xhat, float* gy,
                                            float* gx) {
  double mean_g = 0, mean_gx = 0;
#pragma omp simd reduction(+ : mean_g, mean_gx)
  for (int64_t c = 0; c < cols; ++c) {
    xhat[c] = (x[c] - mean) * rstd;
    gy[c] = g[c] * gamma[c];
    mean_g += gy[c];
    mean_gx += double(gy[c]) * xhat[c];
  }
  mean_g /= double(cols);
  mean_gx /= double(cols);
  for (int64_t c = 0; c < cols; ++c) {
    gx[c] = float(rstd * (gy[c] - mean_g - xhat[c] * mean_gx));
  }
}

// A row of scores s in place: softmax(s * scale). The sum in double.
HPT_VECTOR_CLONES void SoftmaxRow(float* s, int64_t n, float scale) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t c = 0; c < n; ++c) mx = std::max(mx, s[c] * scale);
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < n; ++c) {
    s[c] = ExpF(s[c] * scale - mx);
    sum += s[c];
  }
  const float inv = float(1.0 / sum);
  for (int64_t c = 0; c < n; ++c) s[c] *= inv;
}
// A row of the softmax's input gradient in place: given dP (d) and P (p),
// dS = P (dP - rowsum(dP P)) * scale.
HPT_VECTOR_CLONES void SoftmaxBackwardRow(float* d, const float* p, int64_t n, float scale) {
  double dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t c = 0; c < n; ++c) dot += double(d[c]) * p[c];
  const float fdot = float(dot);
  for (int64_t c = 0; c < n; ++c) d[c] = p[c] * (d[c] - fdot) * scale;
}

HPT_VECTOR_CLONES std::pair<float, float> MinMax(const float* v, int64_t n) {
  float lo = v[0], hi = v[0];
#pragma omp simd reduction(min : lo) reduction(max : hi)
  for (int64_t i = 1; i < n; ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  return {lo, hi};
}

HPT_VECTOR_CLONES void Digitise(float* v, int64_t n, double low, double step, double codes) {
  for (int64_t i = 0; i < n; ++i) {
    const double code = std::min(codes, std::max(0.0, std::nearbyint((v[i] - low) / step)));
    v[i] = static_cast<float>(low + code * step);
  }
}

}  // namespace hpt
