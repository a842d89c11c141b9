// Row-major single-precision GEMM over the system BLAS (libblas.so.3, which
// ./hpt setup points at OpenBLAS). Lets the device models compute real
// products fast without including LibTorch.
#ifndef HPT_DEVICES_BLAS_H_
#define HPT_DEVICES_BLAS_H_

#include <cstdint>

namespace hpt {

// C[m x n] = alpha * A[m x k] * B[k x n] + beta * C; all row-major with the
// given leading dimensions (row strides).
void Sgemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc);

// C[m x n] = alpha * A[m x k] * B^T + beta * C, with B stored [n x k].
void SgemmBt(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc);

// C[m x n] = alpha * A^T * B + beta * C, with A stored [k x m].
void SgemmAt(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc);

}  // namespace hpt

#endif  // HPT_DEVICES_BLAS_H_
