#include "devices/blas.h"

extern "C" {
// Fortran BLAS (column-major).
void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
            const int* k, const float* alpha, const float* a, const int* lda,
            const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc);
}

namespace hpt {

// Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
void Sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int im = static_cast<int>(m), in = static_cast<int>(n),
            ik = static_cast<int>(k), ilda = static_cast<int>(lda),
            ildb = static_cast<int>(ldb), ildc = static_cast<int>(ldc);
  sgemm_("N", "N", &in, &im, &ik, &alpha, b, &ildb, a, &ilda, &beta, c, &ildc);
}

void SgemmBt(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int im = static_cast<int>(m), in = static_cast<int>(n),
            ik = static_cast<int>(k), ilda = static_cast<int>(lda),
            ildb = static_cast<int>(ldb), ildc = static_cast<int>(ldc);
  sgemm_("T", "N", &in, &im, &ik, &alpha, b, &ildb, a, &ilda, &beta, c, &ildc);
}

void SgemmAt(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int im = static_cast<int>(m), in = static_cast<int>(n),
            ik = static_cast<int>(k), ilda = static_cast<int>(lda),
            ildb = static_cast<int>(ldb), ildc = static_cast<int>(ldc);
  sgemm_("N", "T", &in, &im, &ik, &alpha, b, &ildb, a, &ilda, &beta, c, &ildc);
}

}  // namespace hpt
