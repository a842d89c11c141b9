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

// C = alpha op(A) op(B) + beta C, checked against the sum written out.
void Check(const Strided& c0, const Strided& c, auto a_at, auto b_at) {
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < kK; ++p) sum += double(a_at(i, p)) * b_at(p, j);
      EXPECT_NEAR(c.at(i, j), kAlpha * sum + kBeta * c0.at(i, j), 1e-5) << i << "," << j;
    }
    // Padding past each row's width is untouched.
    for (int64_t j = kN; j < c.ld; ++j) EXPECT_EQ(c.v[i * c.ld + j], c0.v[i * c0.ld + j]);
  }
}

TEST(BlasTest, PlainProduct) {
  const Strided a(kM, kK, 1), b(kK, kN, 2), c0(kM, kN, 3);
  Strided c = c0;
  Sgemm(kM, kN, kK, kAlpha, a.v.data(), a.ld, b.v.data(), b.ld, kBeta, c.v.data(), c.ld);
  Check(c0, c, [&](int64_t i, int64_t p) { return a.at(i, p); },
        [&](int64_t p, int64_t j) { return b.at(p, j); });
}

TEST(BlasTest, SecondOperandTransposed) {
  const Strided a(kM, kK, 4), bt(kN, kK, 5), c0(kM, kN, 6);
  Strided c = c0;
  SgemmBt(kM, kN, kK, kAlpha, a.v.data(), a.ld, bt.v.data(), bt.ld, kBeta, c.v.data(), c.ld);
  Check(c0, c, [&](int64_t i, int64_t p) { return a.at(i, p); },
        [&](int64_t p, int64_t j) { return bt.at(j, p); });
}

TEST(BlasTest, FirstOperandTransposed) {
  const Strided at(kK, kM, 7), b(kK, kN, 8), c0(kM, kN, 9);
  Strided c = c0;
  SgemmAt(kM, kN, kK, kAlpha, at.v.data(), at.ld, b.v.data(), b.ld, kBeta, c.v.data(), c.ld);
  Check(c0, c, [&](int64_t i, int64_t p) { return at.at(p, i); },
        [&](int64_t p, int64_t j) { return b.at(p, j); });
}

}  // namespace
}  // namespace hpt
