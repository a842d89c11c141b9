#include "coordinator/training/job_data.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "coordinator/spec/job_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

// A CSV without a split tests on its last 20 % of rows in time: 100 rows,
// input 6 and horizon 1, so train windows lie in rows 0-79 and every test
// window forecasts a row from 80 on.
TEST(JobDataTest, ACsvWithoutASplitTestsOnItsLastFifth) {
  std::string text = "a,b\n";
  for (int t = 0; t < 100; ++t) text += std::to_string(t) + "," + std::to_string(2 * t) + "\n";
  JobSpec spec;
  spec.mutable_data()->mutable_csv()->set_path(WriteTemp("split.csv", text));
  spec.mutable_data()->set_input_steps(6);
  auto normal = NormalizeJobSpec(spec);
  ASSERT_TRUE(normal.ok()) << normal.status();
  DataSummary summary;
  auto data = BuildJobData(normal->data(), &summary);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train_starts().size(), size_t(80 - 7 + 1));
  EXPECT_EQ(data->test_starts().size(), 20u);  // targets at rows 80..99
  EXPECT_EQ(summary.test_samples(), 20);
  EXPECT_EQ(summary.split(),
            "train on rows 0-79, test on the last 20 (rows 80-99): the last 20 % in time, as the "
            "data gave no split");
  // Training rows given and no test rows: no test split, and the summary
  // says how to give one.
  spec.mutable_data()->mutable_csv()->set_train_end_row(100);
  DataSummary given;
  auto no_test = BuildJobData(NormalizeJobSpec(spec)->data(), &given);
  ASSERT_TRUE(no_test.ok()) << no_test.status();
  EXPECT_TRUE(no_test->test_starts().empty());
  EXPECT_EQ(given.test_samples(), 0);
  EXPECT_THAT(given.split(), ::testing::HasSubstr("no test split, so no test metrics (give "
                                                  "data.csv.test_begin_row and test_end_row"));
}

// Too few rows for the default split, and a given test range that holds no
// window: refused at submission, each naming the fix.
TEST(JobDataTest, TooFewRowsForASplitAreRefusedNamingTheFix) {
  std::string text;
  for (int t = 0; t < 10; ++t) text += std::to_string(t) + "," + std::to_string(2 * t) + "\n";
  JobSpec spec;
  spec.mutable_data()->mutable_csv()->set_path(WriteTemp("ten.csv", text));
  spec.mutable_data()->set_input_steps(12);
  auto short_file = BuildJobData(NormalizeJobSpec(spec)->data(), nullptr);
  ASSERT_FALSE(short_file.ok());
  EXPECT_EQ(short_file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(short_file.status().message(),
              ::testing::HasSubstr("the file's 10 data rows are too few: a sample spans "
                                   "data.input_steps (12) + data.horizon (1) = 13 rows, and "
                                   "training and testing need at least 14"));
  // 14 rows is the least: one window trains, one target tests.
  for (int t = 10; t < 14; ++t) text += std::to_string(t) + "," + std::to_string(2 * t) + "\n";
  spec.mutable_data()->mutable_csv()->set_path(WriteTemp("fourteen.csv", text));
  auto least = BuildJobData(NormalizeJobSpec(spec)->data(), nullptr);
  ASSERT_TRUE(least.ok()) << least.status();
  EXPECT_EQ(least->train_starts().size(), 1u);
  EXPECT_EQ(least->test_starts().size(), 1u);
}

// A covid job's samples are groups of counties: its model (and so the
// baseline probe that times its step) sees a group's counties as tokens,
// not every county of the file.
TEST(JobDataTest, ACovidSampleHoldsAGroupOfCountiesAsItsTokens) {
  std::string text = "GISJOIN,index,Date,confirmed_cases,deaths,foot_traffic\n";
  int index = 0;
  for (const char* county : {"G1", "G2", "G3", "G4", "G5"}) {
    for (int week = 0; week < 20; ++week) {
      text += std::string(county) + "," + std::to_string(++index) + "," +
              std::to_string(6 + 7 * week) + ",1," + std::to_string(week % 3) + ",1\n";
    }
  }
  JobSpec spec;
  DataSpec& data = *spec.mutable_data();
  data.mutable_covid()->set_path(WriteTemp("covid.csv", text));
  data.mutable_covid()->set_counties(3);
  data.mutable_covid()->set_group_stride(1);
  data.mutable_covid()->set_test_from_day(6 + 7 * 15);
  data.set_input_steps(4);
  auto normal = NormalizeJobSpec(spec);
  ASSERT_TRUE(normal.ok()) << normal.status();
  DataSummary summary;
  auto built = BuildJobData(normal->data(), &summary);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(summary.columns(), 5);
  EXPECT_EQ(summary.tokens(), 3);
  EXPECT_EQ(built->num_tokens(), 3);
  EXPECT_EQ(SampleTokens(summary), 3);
  EXPECT_EQ(summary.split(),
            "test on the 5 weeks from Date 111 (data.covid.test_from_day 111), train on the 15 "
            "before");
  // A job stored before tokens were kept: its columns.
  summary.clear_tokens();
  EXPECT_EQ(SampleTokens(summary), 5);
  // A split Date past the file's last, or at its first, leaves nothing to
  // test or train on: refused naming the file's Dates.
  for (auto [day, what] : {std::pair{500, "no week to test on"}, {6, "no week to train on"}}) {
    data.mutable_covid()->set_test_from_day(day);
    auto outside = BuildJobData(NormalizeJobSpec(spec)->data(), nullptr);
    ASSERT_FALSE(outside.ok());
    EXPECT_EQ(outside.status().message(),
              absl::StrCat("data.covid.test_from_day ", day, " leaves ", what,
                           ": the file's Dates run 6 to 139; give one inside them"));
  }
}

TEST(JobDataTest, SweTrainsOnSyntheticSeriesOverTheStationTable) {
  const std::string stations = WriteTemp(
      "stations.csv",
      "Station Name,Elevation_x,Latitude_x,Longitude_x,Aspect_tif_x,Slope_tif1_x,LandCover\n"
      "A,9000,46,-110,0,20,52\nB,7000,44,-112,180,10,42\nC,5000,40,-120,90,5,52\n");
  JobSpec spec;
  spec.mutable_data()->mutable_swe()->set_stations_csv(stations);
  auto normal = NormalizeJobSpec(spec);
  ASSERT_TRUE(normal.ok()) << normal.status();
  EXPECT_EQ(normal->data().swe().days(), 1095);
  DataSummary summary;
  auto data = BuildJobData(normal->data(), &summary);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_tokens(), 3);
  // The last water year tests: 365 targets, as many test windows.
  EXPECT_EQ(data->test_starts().size(), 365u);
  EXPECT_EQ(data->train_starts().size(), size_t(730 - 12 - 1 + 1));
  EXPECT_EQ(summary.rows(), 1095);
  EXPECT_EQ(summary.columns(), 3);
  EXPECT_THAT(summary.source(), ::testing::HasSubstr("synthetic"));
  EXPECT_EQ(summary.split(),
            "test on the last water year (days 730-1094), train on the 730 days "
            "before");

  spec.mutable_data()->mutable_swe()->set_stations_csv(stations + ".missing");
  auto missing = BuildJobData(NormalizeJobSpec(spec)->data());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr("data.swe:"));
  spec.mutable_data()->mutable_swe()->set_days(100);
  EXPECT_THAT(std::string(NormalizeJobSpec(spec).status().message()),
              ::testing::HasSubstr("data.swe.days"));
}

}  // namespace
// A weather test year outside the stations' period names the period.
TEST(JobDataTest, AWeatherTestYearOutsideThePeriodNamesIt) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/awn";
  std::filesystem::create_directories(dir);
  std::string text = "TSTAMP_HOUR, MAX_TSTAMP_PST, UNIT_ID, AIR_TEMP_F, \n";
  for (int h = 0; h < 24; ++h) {
    text += absl::StrFormat("2019-12-31 %02d:00,x, 1, %d,\n2020-01-01 %02d:00,x, 1, %d,\n", h, h, h,
                            h + 1);
  }
  WriteTemp("awn/AWN_60_1.csv", text);
  JobSpec spec;
  spec.mutable_data()->mutable_weather()->set_dir(dir);
  spec.mutable_data()->mutable_weather()->set_test_year(2030);
  spec.mutable_data()->set_input_steps(2);
  auto data = BuildJobData(NormalizeJobSpec(spec)->data(), nullptr);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().message(),
            "data.weather.test_year 2030 is not in the stations' common period (2019 to 2020): "
            "give a year in it (hptctl submit --test_year=YEAR)");
  spec.mutable_data()->mutable_weather()->set_test_year(2020);
  DataSummary summary;
  auto in_period = BuildJobData(NormalizeJobSpec(spec)->data(), &summary);
  ASSERT_TRUE(in_period.ok()) << in_period.status();
  EXPECT_EQ(summary.split(),
            "test on 2020 (rows 24-47, 2020-01-01 00:00 to 2020-01-01 23:00), train on the 24 "
            "rows of the other years (data.weather.test_year)");
}

}  // namespace hpt
