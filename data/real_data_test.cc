#include "data/real_data.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

// The AgWeatherNet layout: padded header names, blank cells, trailing comma.
constexpr char kHeader[] =
    "TSTAMP_HOUR, MAX_TSTAMP_PST, UNIT_ID, AIR_TEMP_F, RELATIVE_HUMIDITY_%, \n";

TEST(AgWeatherTest, JoinsStationsOnTheHourAndFillsBlanks) {
  const std::string a = std::string(kHeader) +
                        "2019-12-31 22:00,x, 1, 10,50,\n"
                        "2019-12-31 23:00,x, 1, ,51,\n"  // blank: interpolated
                        "2020-01-01 00:00,x, 1, 30,52,\n"
                        "2020-01-01 01:00,x, 1, 40,53,\n";
  const std::string b = std::string(kHeader) +
                        "2019-12-31 23:00,x, 2, 5,50,\n"
                        "2020-01-01 00:00,x, 2, 6,50,\n"
                        "2020-01-01 01:00,x, 2, 7,50,\n"
                        "2020-01-01 02:00,x, 2, 8,50,\n";
  auto w = ParseAgWeather({{"dir/AWN_60_1.csv", a}, {"dir/AWN_60_2.csv", b}}, {});
  ASSERT_TRUE(w.ok()) << w.status();
  // Common span 23:00 .. 01:00: three hours.
  ASSERT_EQ(w->series.rows, 3);
  ASSERT_EQ(w->series.columns, 2);
  EXPECT_EQ(w->series.column_names, (std::vector<std::string>{"AWN_60_1", "AWN_60_2"}));
  EXPECT_EQ(w->series.values, (std::vector<float>{20, 5, 30, 6, 40, 7}));
  EXPECT_EQ(w->years, (std::vector<int>{2019, 2020, 2020}));
  EXPECT_EQ(w->filled_cells, 1);
}

TEST(AgWeatherTest, AGridOverTheCellLimitIsRefusedBeforeItIsAllocated) {
  // Two rows 9,998 years apart span 87.6 M hours: refused by size, not
  // by running out of memory.
  const std::string wide = std::string(kHeader) +
                           "0001-01-01 00:00,x, 1, 10,50,\n"
                           "9999-12-31 23:00,x, 1, 11,50,\n";
  auto w = ParseAgWeather({{"AWN_60_1.csv", wide}}, {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(w.status().message(), HasSubstr("over the limit of 50000000 cells"));
  // The limit is the caller's: 31 days of hours (721) against 700.
  WeatherOptions small;
  small.limits.max_cells = 700;
  const std::string month = std::string(kHeader) +
                            "2020-01-01 00:00,x, 1, 10,50,\n"
                            "2020-01-31 00:00,x, 1, 11,50,\n";
  auto m = ParseAgWeather({{"AWN_60_1.csv", month}}, small);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("721 rows x 1 columns"));
  small.limits.max_cells = 721;
  EXPECT_TRUE(ParseAgWeather({{"AWN_60_1.csv", month}}, small).ok());
}

TEST(AgWeatherTest, RowsWithoutAnHourAreSkippedAndCounted) {
  // Three of the eight real station files open with a row whose
  // TSTAMP_HOUR is empty and whose other stamps are 0000-00-00 00:00:00.
  const std::string a = std::string(kHeader) +
                        ",0000-00-00 00:00:00, 1, ,,\n"
                        "0000-00-00 00:00,x, 1, 3,50,\n"
                        "2020-01-01 00:00,x, 1, 30,52,\n"
                        "   ,x\n"  // a short row without an hour
                        "2020-01-01 01:00,x, 1, 40,53,\n";
  auto w = ParseAgWeather({{"AWN_60_1.csv", a}}, {});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->skipped_rows, 3);
  EXPECT_EQ(w->series.values, (std::vector<float>{30, 40}));
}

TEST(AgWeatherTest, ErrorsNameFileLineAndColumn) {
  auto bad = ParseAgWeather(
      {{"s.csv", std::string(kHeader) + "2020-01-01 00:00,x,1,warm,5,\n"}}, {});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("s.csv:2:4: AIR_TEMP_F 'warm'"));
  auto hour = ParseAgWeather({{"s.csv", std::string(kHeader) + "01/01/2020,x,1,5,5,\n"}}, {});
  EXPECT_THAT(hour.status().message(), HasSubstr("s.csv:2:1: TSTAMP_HOUR '01/01/2020'"));
  WeatherOptions other;
  other.target = "SOIL_TEMP";
  auto missing = ParseAgWeather({{"s.csv", std::string(kHeader) + "2020-01-01 00:00,x,1,5,5,\n"}},
                                other);
  EXPECT_THAT(missing.status().message(), HasSubstr("s.csv:1: header lacks SOIL_TEMP"));
}

constexpr char kCovid[] =
    "GISJOIN,index,Date,confirmed_cases,deaths,foot_traffic\n"
    "G1,1,6,1,0,100\n"
    "G1,2,13,2,1,90\n"
    "G1,3,216,3,9,80\n"
    "G2,4,6,5,4,10\n"
    "G2,5,13,6,5,11\n"
    "G2,6,216,7,6,12\n"
    "G3,7,13,1,0,1\n"
    "G3,8,6,1,0,1\n"
    "G3,9,216,1,1,1\n";

TEST(CovidTest, PivotsCountiesByWeekAndKeepsTheLargest) {
  CovidOptions o;
  o.counties = 2;
  auto c = ParseCovidCsv(kCovid, "covid.csv", o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->days, (std::vector<int64_t>{6, 13, 216}));
  EXPECT_EQ(c->all_counties, 3);
  EXPECT_EQ(c->feature_names,
            (std::vector<std::string>{"confirmed_cases", "deaths", "foot_traffic"}));
  // Training-period deaths: G2 9, G1 1, G3 0 -> G2, G1.
  EXPECT_EQ(c->series.column_names, (std::vector<std::string>{"G2", "G1"}));
  EXPECT_EQ(c->series.values, (std::vector<float>{4, 0, 5, 1, 6, 9}));
  // features[week][county][feature]: G3 (third county) week 13 foot traffic.
  EXPECT_EQ(c->features[(1 * 3 + 2) * 3 + 2], 1.0f);
}

TEST(CovidTest, AGridOverTheCellLimitIsRefused) {
  CovidOptions o;
  o.limits.max_cells = 10;  // the sample file's grid is weeks x counties x features > 10
  auto c = ParseCovidCsv(kCovid, "covid.csv", o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("covid.csv: weeks x counties x features"));
}

TEST(CovidTest, AllCountiesComeInGisjoinOrder) {
  CovidOptions o;
  o.all_counties = true;
  auto c = ParseCovidCsv(kCovid, "covid.csv", o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->series.column_names, (std::vector<std::string>{"G1", "G2", "G3"}));
  ASSERT_EQ(c->series.columns, 3);
  // Week 2 (Date 13): deaths 1, 5, 0.
  EXPECT_EQ(c->series.at(1, 0), 1);
  EXPECT_EQ(c->series.at(1, 1), 5);
  EXPECT_EQ(c->series.at(1, 2), 0);
}

TEST(CovidTest, MissingWeeksAndBadCellsAreNamed) {
  const std::string missing = std::string(kCovid).substr(0, std::string(kCovid).rfind("G3,9"));
  auto m = ParseCovidCsv(missing, "covid.csv", {});
  EXPECT_THAT(m.status().message(),
              HasSubstr("county G3 has 2 weeks; the file has 3: it lacks Date 216. Every county "
                        "needs a row for every Date: add the rows, or remove the county"));
  auto bad = ParseCovidCsv(std::string(kCovid) + "G4,10,6,1,x,1\n", "covid.csv", {});
  EXPECT_THAT(bad.status().message(), HasSubstr("covid.csv:11:5: deaths 'x'"));
}

}  // namespace
}  // namespace hpt
