#include "devices/blas.h"

extern "C" {
// Fortran BLAS (column-major).
void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
            const int* k, const float* alpha, const float* a, const int* lda,
            const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc);
}

namespace hpt {
namespace {

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
