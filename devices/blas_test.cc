#include "devices/blas.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

// Row-major matrices with a row stride wider than their width, so the
// leading dimensions are exercised; element (r, c) at r * ld + c.
struct Strided {
  int64_t rows, cols, ld;
  std::vector<float> v;
  Strided(int64_t r, int64_t c, uint32_t seed) : rows(r), cols(c), ld(c + 3), v(r * (c + 3)) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& x : v) x = u(rng);
  }
  float at(int64_t r, int64_t c) const { return v[r * ld + c]; }
};

constexpr int64_t kM = 5, kN = 7, kK = 4;
constexpr float kAlpha = 0.5f, kBeta = 2.0f;

// C = alpha op(A) op(B) + beta C through the wrapper for the given
// transposes, checked against the sum written out; the padding past each of
// C's rows is left as it was.
void CheckProduct(bool a_transposed, bool b_transposed) {
  const Strided a = a_transposed ? Strided(kK, kM, 1) : Strided(kM, kK, 1);
  const Strided b = b_transposed ? Strided(kN, kK, 2) : Strided(kK, kN, 2);
  const Strided c0(kM, kN, 3);
  Strided c = c0;
  if (a_transposed) {
    SgemmAt(kM, kN, kK, kAlpha, a.v.data(), a.ld, b.v.data(), b.ld, kBeta, c.v.data(), c.ld);
  } else if (b_transposed) {
    SgemmBt(kM, kN, kK, kAlpha, a.v.data(), a.ld, b.v.data(), b.ld, kBeta, c.v.data(), c.ld);
  } else {
    Sgemm(kM, kN, kK, kAlpha, a.v.data(), a.ld, b.v.data(), b.ld, kBeta, c.v.data(), c.ld);
  }
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < kK; ++p) {
        sum += double(a_transposed ? a.at(p, i) : a.at(i, p)) *
               (b_transposed ? b.at(j, p) : b.at(p, j));
      }
      EXPECT_NEAR(c.at(i, j), kAlpha * sum + kBeta * c0.at(i, j), 1e-5) << i << "," << j;
    }
    for (int64_t j = kN; j < c.ld; ++j) EXPECT_EQ(c.v[i * c.ld + j], c0.v[i * c0.ld + j]);
  }
}

TEST(BlasTest, PlainProduct) { CheckProduct(false, false); }
TEST(BlasTest, SecondOperandTransposed) { CheckProduct(false, true); }
TEST(BlasTest, FirstOperandTransposed) { CheckProduct(true, false); }

}  // namespace
}  // namespace hpt
