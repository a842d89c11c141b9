// The CPU kernels of the device models, behind a header that keeps
// LibTorch out of its includers. From LibTorch (cpu_kernels.cc):
//   - an exact integer GEMM for operands that are small integers (the ReRAM
//     crossbar read: 8-bit inputs times 8-bit weight levels): int8
//     operands, int32 sums, through at::_int_mm (oneDNN), several times
//     faster than an fp32 GEMM of the same shape on CPUs with VNNI or AMX
//     (measured in //benchmarks:reram_forward_bench);
//   - a parallel loop over LibTorch's intra-op thread pool, for the
//     element-wise passes around those products;
//   - inverted-dropout masks from a counter-based hash, shared by the
//     LibTorch model on CPU and the systolic-array segments.
// Without it (cpu_row_kernels.cc): the element-wise row kernels of the
// simulated devices' vector work (ReLU, residual adds, LayerNorm, softmax).
#ifndef HPT_DEVICES_CPU_KERNELS_H_
#define HPT_DEVICES_CPU_KERNELS_H_

#include <cstdint>
#include <functional>
#include <utility>

// Compiles a function for AVX-512, AVX2 and the x86-64 baseline; the CPU
// picks one when the program loads (GCC function multiversioning), so the
// build targets any x86-64 and the element-wise loops run at the machine's
// vector width. For the device models' hot loops, built with -O3.
#define HPT_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace hpt {

// C[m x n] = A[m x k] B, all row-major and dense: B is [k x n], or with
// `b_transposed` stored [n x k] and read transposed. Exact while every sum
// fits int32 (|sum| < 2^31; 8-bit operands allow k up to 2^17).
void Int8Gemm(int64_t m, int64_t n, int64_t k, const int8_t* a, const int8_t* b,
              bool b_transposed, int32_t* c);

// Calls body(begin, end) on disjoint chunks covering [0, n), of at least
// `grain` elements each, on LibTorch's intra-op threads (inline when n is
// under `grain` or there is one thread). The chunks are fixed by n, grain
// and the thread count, so a body whose result depends only on the index
// (a counter-based random draw, say) is deterministic.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// mask[e] for e in [0, n): 0 with probability p, else 1 / (1 - p). Element e
// is dropped when a 32-bit hash of (e, seed) falls under p * 2^32, so the
// mask is a function of (seed, e) only, whatever the threads; the loop is
// vectorised (AVX-512, AVX2 or baseline, picked by the CPU) and split over
// the intra-op threads. Needs 0 <= p < 1.
void FillDropoutMask(float* mask, int64_t n, double p, uint64_t seed);

// y[j] = x[j] * mask[first + j] for j in [0, n), with the mask of
// FillDropoutMask(seed) computed on the fly, never stored: a backward
// applies the same call to the gradient. `y` may be `x`. `parallel`: split
// over the intra-op threads (false from inside a ParallelFor body).
void ApplyDropout(const float* x, float* y, int64_t n, double p, uint64_t seed,
                  int64_t first = 0, bool parallel = true);

// Element-wise row kernels of the simulated devices' vector work
// (workers/segment_ops*.cc), vectorised for the machine's width
// (cpu_row_kernels.cc).
void Relu(float* y, int64_t n);
// g where x > 0, else 0.
void ReluBackward(float* g, const float* x, int64_t n);
void AddInPlace(float* y, const float* x, int64_t n);
// One row of LayerNorm in place: y = (y - mean) / sigma * gamma + beta.
// Returns {mean, 1 / sigma}; sums in double.
std::pair<float, float> LayerNormRow(float* y, const float* gamma, const float* beta,
                                     int64_t cols, double eps);
// One row's LayerNorm input gradient gx from its output gradient g, with
// x-hat rebuilt from the row's input x and its statistics (written to
// `xhat`; gy = g * gamma).
void LayerNormBackwardRow(const float* g, const float* gamma, const float* x, float mean,
                          float rstd, int64_t cols, float* xhat, float* gy, float* gx);
// The least and greatest of v[0, n), n >= 1.
std::pair<float, float> MinMax(const float* v, int64_t n);
// An ADC's conversion of v[0, n) in place, in double: the nearest of
// `codes` + 1 levels low + c * step (c = 0..codes), ties to even.
void Digitise(float* v, int64_t n, double low, double step, double codes);
// A row of scores s in place: softmax(s * scale). The sum in double; e^x
// within 1 ulp (a vectorisable Cephes expf).
void SoftmaxRow(float* s, int64_t n, float scale);
// A row of the softmax's input gradient in place: given dP (d) and P (p),
// dS = P (dP - rowsum(dP P)) * scale.
void SoftmaxBackwardRow(float* d, const float* p, int64_t n, float scale);

}  // namespace hpt

#endif  // HPT_DEVICES_CPU_KERNELS_H_
