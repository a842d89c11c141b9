#include "devices/cpu_kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

// Every sum of int8 products, in int64, against the GEMM's int32 result:
// equal element for element, at odd shapes and at the extremes of int8.
TEST(Int8GemmTest, ExactAtOddShapesBothLayouts) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(-128, 127);
  for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 512, 512}, {5, 57, 3}, {57, 12, 129}, {3, 1, 1}, {64, 1024, 16}}) {
    std::vector<int8_t> a(m * k), b(k * n), bt(n * k);
    for (auto& v : a) v = static_cast<int8_t>(value(rng));
    for (auto& v : b) v = static_cast<int8_t>(value(rng));
    a[0] = -128;
    b[0] = -128;  // the largest product
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < n; ++j) bt[j * k + i] = b[i * n + j];
    }
    std::vector<int32_t> c(m * n, 7), ct(m * n, 7);
    Int8Gemm(m, n, k, a.data(), b.data(), /*b_transposed=*/false, c.data());
    Int8Gemm(m, n, k, a.data(), bt.data(), /*b_transposed=*/true, ct.data());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t want = 0;
        for (int64_t l = 0; l < k; ++l) want += int64_t(a[i * k + l]) * b[l * n + j];
        ASSERT_EQ(c[i * n + j], want) << m << "x" << k << "x" << n << " at " << i << "," << j;
        ASSERT_EQ(ct[i * n + j], want) << "transposed, " << m << "x" << k << "x" << n;
      }
    }
  }
}

// Sums past float's 24-bit mantissa stay exact (an fp32 GEMM would round).
TEST(Int8GemmTest, SumsPastTwoToTheTwentyFourAreExact) {
  const int64_t k = 2048;
  std::vector<int8_t> a(k, 127), b(k, 127);
  a[0] = 126;
  int32_t c = 0;
  Int8Gemm(1, 1, k, a.data(), b.data(), false, &c);
  EXPECT_EQ(c, 127 * 127 * (k - 1) + 126 * 127);  // 33,032,573 > 2^24
}

// The ADC's conversion, element by element against the scalar rule, at
// lengths past every vector width's tail, with ties (x.5 steps) and
// values outside the range.
TEST(DigitiseTest, EveryElementIsItsNearestLevelTiesToEven) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-40.0f, 400.0f);
  for (int64_t n : {1, 7, 8, 17, 64, 131}) {
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = i % 3 == 0 ? float(2 * i) + 0.5f : value(rng);
    const std::vector<float> in = v;
    const auto [lo, hi] = MinMax(v.data(), n);
    EXPECT_EQ(lo, *std::min_element(in.begin(), in.end()));
    EXPECT_EQ(hi, *std::max_element(in.begin(), in.end()));
    const double low = 3.0, step = 1.0, codes = 255.0;
    Digitise(v.data(), n, low, step, codes);
    for (int64_t i = 0; i < n; ++i) {
      const double c = std::min(codes, std::max(0.0, std::nearbyint((in[i] - low) / step)));
      EXPECT_EQ(v[i], float(low + c * step)) << n << " " << i << " " << in[i];
    }
  }
  std::vector<float> ties = {3.5f, 4.5f, 2.0f, 1000.0f};
  Digitise(ties.data(), 4, 3.0, 1.0, 255.0);
  EXPECT_EQ(ties, (std::vector<float>{3.0f, 5.0f, 3.0f, 258.0f}));
}

// Every index is visited exactly once, whatever the chunking.
TEST(ParallelForTest, CoversEveryIndexOnce) {
  for (int64_t n : {0, 1, 999, 100000}) {
    std::vector<std::atomic<int>> seen(n);
    ParallelFor(n, 1024, [&](int64_t begin, int64_t end) {
      ASSERT_LE(0, begin);
      ASSERT_LE(begin, end);
      ASSERT_LE(end, n);
      for (int64_t i = begin; i < end; ++i) seen[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << "n " << n << " index " << i;
  }
}

TEST(DropoutTest, AppliedMaskIsTheStoredMaskAtAnyOffset) {
  constexpr int64_t kN = 200000;  // several parallel chunks
  constexpr double kP = 0.3;
  constexpr uint64_t kSeed = 0x1234567890ULL;
  std::vector<float> mask(kN), x(kN);
  FillDropoutMask(mask.data(), kN, kP, kSeed);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-2, 2);
  for (float& v : x) v = u(rng);
  std::vector<float> y(kN);
  ApplyDropout(x.data(), y.data(), kN, kP, kSeed);
  int64_t dropped = 0;
  for (int64_t e = 0; e < kN; ++e) {
    ASSERT_EQ(y[e], x[e] * mask[e]) << e;
    dropped += mask[e] == 0.0f;
  }
  EXPECT_NEAR(double(dropped) / kN, kP, 0.01);
  // A block starting at `first`, serial, in place: the same elements.
  constexpr int64_t kFirst = 77777, kLen = 3000;
  std::vector<float> block(x.begin() + kFirst, x.begin() + kFirst + kLen);
  ApplyDropout(block.data(), block.data(), kLen, kP, kSeed, kFirst, /*parallel=*/false);
  for (int64_t j = 0; j < kLen; ++j) ASSERT_EQ(block[j], y[kFirst + j]) << j;
  // Another seed, another mask.
  ApplyDropout(x.data(), y.data(), kN, kP, kSeed + 1);
  int64_t differ = 0;
  for (int64_t e = 0; e < kN; ++e) differ += y[e] != x[e] * mask[e];
  EXPECT_GT(differ, kN / 4);
}

}  // namespace
}  // namespace hpt
