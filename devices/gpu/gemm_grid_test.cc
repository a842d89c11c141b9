#include "devices/gpu/gemm_grid.h"

#include <cmath>

#include "gtest/gtest.h"

namespace hpt {
namespace {

// Rates 1e9 * m / 8 * (k == 8 ? 1 : 4) * (n == 8 ? 1 : 2): each axis scales
// the rate by its own factor, so a log-linear read is exact between points.
GemmGrid TwoByTwoByTwo() {
  std::vector<double> rates;
  for (int64_t m : {8, 512}) {
    for (int64_t k : {8, 512}) {
      for (int64_t n : {8, 512}) {
        rates.push_back(1e9 * double(m) / 8 * (k == 8 ? 1 : 4) * (n == 8 ? 1 : 2));
      }
    }
  }
  return *GemmGrid::Make({8, 512}, {8, 512}, {8, 512}, rates);
}

TEST(GemmGridTest, ReadsItsPointsAndInterpolatesInLogSpace) {
  const GemmGrid g = TwoByTwoByTwo();
  EXPECT_DOUBLE_EQ(g.Rate({8, 8, 8}), 1e9);
  EXPECT_DOUBLE_EQ(g.Rate({512, 512, 512}), 1e9 * 64 * 4 * 2);
  // 64 is halfway from 8 to 512 in log space: the rate's factors halve in log.
  EXPECT_NEAR(g.Rate({64, 8, 8}), 8e9, 1);
  EXPECT_NEAR(g.Rate({8, 8, 64}), 2e9, 1);  // m, n, k
  EXPECT_NEAR(g.Rate({64, 64, 64}), 1e9 * 8 * 2 * std::sqrt(2.0), 10);
}

TEST(GemmGridTest, HoldsItsEdgesInsteadOfExtrapolating) {
  const GemmGrid g = TwoByTwoByTwo();
  EXPECT_DOUBLE_EQ(g.Rate({1, 1, 1}), g.Rate({8, 8, 8}));
  EXPECT_DOUBLE_EQ(g.Rate({100000, 100000, 4}), g.Rate({512, 512, 8}));
}

TEST(GemmGridTest, ASingleValueAxisIsFlat) {
  const GemmGrid g = *GemmGrid::Make({16}, {8, 64}, {32}, {1e9, 8e9});
  EXPECT_DOUBLE_EQ(g.Rate({1000, 1, 8}), 1e9);
  EXPECT_NEAR(g.Rate({1, 1, 16}), 2e9, 1);
}

TEST(GemmGridTest, CappingHoldsEveryRateToTheCap) {
  GemmGrid g = *GemmGrid::Make({8, 64}, {8}, {8}, {1e9, 5e12});
  EXPECT_EQ(g.CapRates(1e10), 1);
  EXPECT_EQ(g.RateAt(0, 0, 0), 1e9);
  EXPECT_EQ(g.RateAt(1, 0, 0), 1e10);
  EXPECT_EQ(g.BestRate(), 1e10);
  EXPECT_EQ(g.CapRates(1e10), 0);
}

TEST(GemmGridTest, TextRoundTrips) {
  const GemmGrid g = TwoByTwoByTwo();
  const std::string text = GemmGridText(g);
  EXPECT_EQ(text.substr(0, 18), "8x8x8:1e+09,8x8x51");
  absl::StatusOr<GemmGrid> back = ParseGemmGrid(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(GemmGridText(*back), text);
  EXPECT_TRUE(ParseGemmGrid("").value().empty());
}

TEST(GemmGridTest, BadTextNamesTheEntry) {
  auto message = [](const char* text) {
    return std::string(ParseGemmGrid(text).status().message());
  };
  EXPECT_EQ(message("8x8x8:1e9,8x0x8:2e9"),
            "gemm grid entry 2 ('8x0x8:2e9'): want three positive dimensions MxKxN");
  EXPECT_EQ(message("8x8x8:-1"), "gemm grid entry 1 ('8x8x8:-1'): want a rate > 0");
  EXPECT_EQ(message("8x8x8:1,8x8x8:2"), "gemm grid entry 2 ('8x8x8:2'): shape given twice");
  EXPECT_EQ(message("8x8x8:1,16x8x16:1"),
            "gemm grid: no rate for 8x8x16 (every combination of the dimensions given is "
            "needed)");
  EXPECT_EQ(GemmGrid::Make({8, 4}, {8}, {8}, {1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hpt
