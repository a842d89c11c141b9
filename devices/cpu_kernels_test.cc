#include "devices/cpu_kernels.h"

#include <atomic>

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

}  // namespace
}  // namespace hpt
