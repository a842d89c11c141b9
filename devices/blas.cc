#include "devices/blas.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace hpt {
namespace {

// Fortran BLAS (column-major).
using SgemmFn = void (*)(const char* transa, const char* transb, const int* m, const int* n,
                         const int* k, const float* alpha, const float* a, const int* lda,
                         const float* b, const int* ldb, const float* beta, float* c,
                         const int* ldc);

// OpenBLAS is opened with RTLD_LOCAL, not linked: linked, its sgemm_ would
// also take LibTorch's own GEMM calls in any process holding both (a GPU
// worker on CPU, the benchmarks), and OpenBLAS's pthread pool, called from
// inside LibTorch's OpenMP regions (flash attention runs a GEMM per block),
// spins in sched_yield: swe's 23 steps took 115 s (100 s of system time)
// against 4.3 s with LibTorch on its own BLAS
// (docs/results/2026-11-24-openblas-threads.md).
SgemmFn LoadSgemm() {
  void* lib = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
  void* fn = lib == nullptr ? nullptr : dlsym(lib, "sgemm_");
  if (fn == nullptr) {
    std::fprintf(stderr,
                 "fatal: the device models need the system BLAS (libblas.so.3, OpenBLAS; "
                 "./hpt setup installs it): %s\n",
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<SgemmFn>(fn);
}

void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
            const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
            const float* beta, float* c, const int* ldc) {
  static const SgemmFn fn = LoadSgemm();
  fn(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
// operands swap places, each keeping its own transpose flag.
void RowMajorSgemm(const char* trans_a, const char* trans_b, int64_t m, int64_t n,
                   int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int im = static_cast<int>(m), in = static_cast<int>(n),
            ik = static_cast<int>(k), ilda = static_cast<int>(lda),
            ildb = static_cast<int>(ldb), ildc = static_cast<int>(ldc);
  sgemm_(trans_b, trans_a, &in, &im, &ik, &alpha, b, &ildb, a, &ilda, &beta, c, &ildc);
}

}  // namespace

void Sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc) {
  RowMajorSgemm("N", "N", m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void SgemmBt(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  RowMajorSgemm("N", "T", m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void SgemmAt(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  RowMajorSgemm("T", "N", m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace hpt
