#include "data/swe.h"

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

// Three generated stations in the station table's layout (the real table
// lives outside the repository).
constexpr char kTable[] =
    "Station Name,Station Id_x,Elevation_x,Latitude_x,Longitude_x,Aspect_tif_x,"
    "Slope_tif1_x,LandCover,LC_Detail\n"
    "High North,1,9000,46.0,-110.0,0,20,52,Shrub/Scrub\n"
    "High South,2,9000,46.0,-110.0,180,20,52,Shrub/Scrub\n"
    "Low,3,3000,40.0,-120.0,90,5,52,Shrub/Scrub\n";

TEST(SweTest, ReadsTheStationTable) {
  auto s = ParseSnotelStations(kTable, "stations.csv");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[0].name, "High North");
  EXPECT_DOUBLE_EQ((*s)[1].aspect_deg, 180);
  EXPECT_EQ((*s)[2].land_cover, 52);
  EXPECT_DOUBLE_EQ((*s)[0].elevation_ft, 9000);
}

TEST(SweTest, BadCellsAndMissingColumnsAreNamed) {
  std::string bad = kTable;
  bad.replace(bad.find("9000"), 4, "tall!");
  auto s = ParseSnotelStations(bad, "stations.csv");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("stations.csv:2:3: Elevation_x 'tall!'"));
  auto header = ParseSnotelStations("Station Name,Elevation_x\nA,1\n", "t.csv");
  EXPECT_THAT(header.status().message(), HasSubstr("t.csv:1: header lacks 'Latitude_x'"));
}

TEST(SweTest, HighStationsHoldSnowLongerAndSouthSlopesMeltFirst) {
  auto s = ParseSnotelStations(kTable, "stations.csv");
  ASSERT_TRUE(s.ok());
  const TimeSeriesMatrix m = MakeSweSeries(*s, {});
  ASSERT_EQ(m.rows, 3 * 365);
  ASSERT_EQ(m.columns, 3);
  auto peak = [&](int64_t c) {
    float p = 0;
    for (int64_t d = 0; d < 365; ++d) p = std::max(p, m.at(d, c));
    return p;
  };
  auto snow_days = [&](int64_t c) {
    int64_t n = 0;
    for (int64_t d = 0; d < 365; ++d) n += m.at(d, c) > 1.0f;
    return n;
  };
  // The high stations build a winter pack; the low, warm one barely.
  EXPECT_GT(peak(0), 200);
  EXPECT_GT(peak(0), 5 * peak(2));
  // Same weather and height: the sunny south slope melts out first.
  EXPECT_GT(snow_days(0), snow_days(1));
  // Snow-free in late summer (day 300 = late July), everywhere.
  for (int64_t c = 0; c < 3; ++c) EXPECT_LT(m.at(300, c), 1.0f) << c;
  // Seeded: the same series again.
  EXPECT_EQ(MakeSweSeries(*s, {}).values, m.values);
}

}  // namespace
}  // namespace hpt
