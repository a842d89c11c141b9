#include "data/timestamps.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(TimestampsTest, EveryAcceptedFormReadsAsUtcSeconds) {
  int64_t s = -1;
  ASSERT_TRUE(ParseTimestamp("2023-01-01 06:00", &s));
  EXPECT_EQ(s, 1672552800);
  for (const char* same : {"2023-01-01T06:00", "2023-01-01 06:00:00", "2023/01/01 06:00",
                           " 2023-01-01T06:00:00Z "}) {
    int64_t t = -1;
    EXPECT_TRUE(ParseTimestamp(same, &t)) << same;
    EXPECT_EQ(t, s) << same;
  }
  ASSERT_TRUE(ParseTimestamp("2024-02-29", &s));
  EXPECT_EQ(s, 1709164800);
  ASSERT_TRUE(ParseTimestamp("1969-12-31 23:59:59", &s));
  EXPECT_EQ(s, -1);
}

TEST(TimestampsTest, NumbersAndImpossibleDatesAreNotTimes) {
  int64_t s;
  for (const char* bad : {"", "12.5", "2023", "2023-1-1", "2023-01-01 6:00", "2023-13-01",
                          "2023-02-29", "2023-01-01 24:00", "2023-01/01", "2023-01-01 06:00 x",
                          "Pullman"}) {
    EXPECT_FALSE(ParseTimestamp(bad, &s)) << bad;
  }
}

TEST(TimestampsTest, FormatReadsBackAndTheTypicalStepIsTheCommonestGap) {
  for (int64_t t : {int64_t{0}, int64_t{1672552800}, int64_t{-86400 * 400 + 3600},
                    int64_t{951782400}}) {
    int64_t back;
    ASSERT_TRUE(ParseTimestamp(FormatTimestamp(t), &back)) << FormatTimestamp(t);
    EXPECT_EQ(back, t);
  }
  EXPECT_EQ(FormatTimestamp(1709164800), "2024-02-29 00:00");
  EXPECT_EQ(FormatTimestamp(1709164800, /*date_only=*/true), "2024-02-29");
  EXPECT_EQ(TypicalStep({0, 3600, 7200, 14400, 18000}), 3600);
  EXPECT_EQ(TypicalStep({5}), 0);
  int64_t t;
  ASSERT_TRUE(ParseTimestamp("2024-12-31 23:00", &t));
  EXPECT_EQ(DayOfYear(t), 365);  // a leap year's last day
  ASSERT_TRUE(ParseTimestamp("2023-01-01", &t));
  EXPECT_EQ(DayOfYear(t), 0);
}

}  // namespace
}  // namespace hpt
