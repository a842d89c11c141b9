#include "data/window_dataset.h"

#include <cmath>

#include "data/synthetic.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

TimeSeriesMatrix Ramp(int64_t rows, int64_t columns) {
  TimeSeriesMatrix m;
  m.rows = rows;
  m.columns = columns;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) m.values.push_back(r * 10.0f + c);
  }
  return m;
}

TEST(WindowDatasetTest, WindowsStayInsideTheirSplit) {
  WindowOptions o;
  o.input_steps = 3;
  o.horizon = 2;
  o.train = {0, 10};
  o.test = {10, 16};
  auto ds = WindowDataset::Create(Ramp(16, 2), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  // A sample spans window + horizon = 5 rows.
  EXPECT_EQ(ds->train_starts().size(), 6u);  // starts 0..5
  EXPECT_EQ(ds->test_starts().size(), 2u);   // starts 10, 11
  EXPECT_EQ(ds->test_starts()[0], 10);
}

TEST(WindowDatasetTest, ValidationRowsComeFromTheTrainingRowsJustBeforeTheTest) {
  WindowOptions o;
  o.input_steps = 3;
  o.horizon = 1;
  o.train = {0, 80};
  o.test = {80, 100};
  const std::string said = CarveValidation(0.1, &o);
  EXPECT_EQ(said, "of the training rows, 72-79 validate (8 rows, 10 %, the last before the "
                  "test) and train no window");
  EXPECT_EQ(o.train.end, 72);
  auto ds = WindowDataset::Create(Ramp(100, 2), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->validation_starts().front(), 72);
  EXPECT_EQ(ds->validation_starts().size(), 5u);  // starts 72..76: 4-row windows
  EXPECT_EQ(ds->train_starts().back() + 4, 72);  // the last training window ends before
  // Normalisation is fitted on the training rows left: rows 0-71.
  EXPECT_FLOAT_EQ(ds->mean(0), 355.0f);
}

TEST(WindowDatasetTest, TestInputsThatReachBackIntoTrainingRowsStillCountAsAfter) {
  // The default split: test windows' inputs start span - 1 rows before
  // the first test target, inside the training rows.
  WindowOptions o;
  o.input_steps = 3;
  o.horizon = 1;
  o.train = {0, 80};
  o.test = {77, 100};
  EXPECT_NE(CarveValidation(0.1, &o).find("the last before the test"), std::string::npos);
  EXPECT_EQ(o.validation.end, 80);
}

TEST(WindowDatasetTest, AMiddleTestTakesValidationFromTheRangeBeforeIt) {
  // The paper's wind split: train 0-480 and 2120-end, test in between. 10 %
  // of all training rows exceeds half of the first range, so half it is.
  WindowOptions o;
  o.input_steps = 12;
  o.train = {0, 480};
  o.extra_train = {{2120, 8387}};
  o.test = {480, 2120};
  EXPECT_NE(CarveValidation(0.1, &o).find("240-479 validate (240 rows, 4 %"), std::string::npos);
  EXPECT_EQ(o.train.end, 240);
  EXPECT_EQ(o.extra_train[0].end, 8387);
  // Too few rows for a window each side: nothing changes.
  WindowOptions tiny;
  tiny.input_steps = 12;
  tiny.train = {0, 20};
  EXPECT_EQ(CarveValidation(0.1, &tiny), "");
  EXPECT_EQ(tiny.train.end, 20);
  EXPECT_EQ(CarveValidation(0, &o), "");
  // A test that comes first (weather's test year, the first in its
  // files): the training rows after it give the validation rows.
  WindowOptions first;
  first.input_steps = 24;
  first.train = {0, 0};
  first.extra_train = {{8760, 40000}};
  first.test = {0, 8760};
  EXPECT_NE(CarveValidation(0.1, &first).find("36876-39999 validate (3124 rows, 10 %, the last of "
                                               "them)"),
            std::string::npos);
  EXPECT_EQ(first.extra_train[0].end, 36876);
}

TEST(WindowDatasetTest, ValidationRowsThatOverlapTrainingAreRefused) {
  WindowOptions o;
  o.input_steps = 3;
  o.train = {0, 50};
  o.validation = {40, 60};
  auto ds = WindowDataset::Create(Ramp(100, 1), o);
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("validation rows [40, 60) overlap training rows [0, 50)"),
            std::string::npos);
}

TEST(WindowDatasetTest, GatherLaysOutTokensAndTargets) {
  WindowOptions o;
  o.input_steps = 3;
  o.horizon = 2;
  o.train = {0, 10};
  auto ds = WindowDataset::Create(Ramp(10, 2), o);
  ASSERT_TRUE(ds.ok());
  HostTensor x, y;
  ds->Gather(ds->train_starts(), {4}, &x, &y);
  ASSERT_EQ(x.shape, (std::vector<int64_t>{1, 2, 3}));
  ASSERT_EQ(y.shape, (std::vector<int64_t>{1, 2, 1}));
  // Station 1, rows 4..6, target row 4 + 3 - 1 + 2 = 8; undo the z-score.
  auto raw = [&](float v, int s) { return v * ds->stddev(s) + ds->mean(s); };
  EXPECT_NEAR(raw(x.data[3 + 0], 1), 41.0f, 1e-3);
  EXPECT_NEAR(raw(x.data[3 + 2], 1), 61.0f, 1e-3);
  EXPECT_NEAR(raw(y.data[1], 1), 81.0f, 1e-3);
}

TEST(WindowDatasetTest, NormalisationUsesTrainingRowsOnly) {
  WindowOptions o;
  o.input_steps = 2;
  o.horizon = 1;
  o.train = {0, 4};  // rows 0..3 of column 0: 0, 10, 20, 30
  o.test = {4, 8};
  auto ds = WindowDataset::Create(Ramp(8, 1), o);
  ASSERT_TRUE(ds.ok());
  EXPECT_FLOAT_EQ(ds->mean(0), 15.0f);
  EXPECT_NEAR(ds->stddev(0), std::sqrt(125.0f), 1e-4);
}

TEST(WindowDatasetTest, TrainingRangesOnBothSidesOfTheTestRange) {
  WindowOptions o;
  o.input_steps = 2;
  o.horizon = 1;
  o.train = {0, 4};        // rows 0..3: values 0, 10, 20, 30
  o.test = {4, 8};
  o.extra_train = {{8, 12}};  // rows 8..11: 80, 90, 100, 110
  auto ds = WindowDataset::Create(Ramp(12, 1), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  // Starts 0, 1 in the first range, 8, 9 in the second: none straddles.
  EXPECT_EQ(ds->train_starts(), (std::vector<int64_t>{0, 1, 8, 9}));
  EXPECT_FLOAT_EQ(ds->mean(0), 55.0f);  // over both ranges, not the test rows
  o.extra_train = {{8, 13}};
  EXPECT_EQ(WindowDataset::Create(Ramp(12, 1), o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(WindowDatasetTest, RejectsRangesOutsideTheData) {
  WindowOptions o;
  o.train = {0, 50};
  auto ds = WindowDataset::Create(Ramp(10, 1), o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ds.status().message().find("[0, 50)"), std::string::npos);
}

TEST(WindowDatasetTest, ATestRangeThatHoldsNoWindowIsRefusedWithWhereToBeginIt) {
  WindowOptions o;
  o.input_steps = 12;
  o.horizon = 1;
  o.train = {0, 50};
  o.test = {60, 65};
  auto ds = WindowDataset::Create(Ramp(80, 1), o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ds.status().message(),
            "data: the test rows [60, 65) hold no window of 12 steps plus a horizon of 1: a "
            "range needs at least 13 rows. To forecast rows 60 on, begin it at 48 (a window's "
            "inputs may be training rows, its target never is)");
  // Begun there, its first window's target is row 60.
  o.test = {48, 65};
  ds = WindowDataset::Create(Ramp(80, 1), o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->test_starts().size(), 5u);  // targets at rows 60..64
  EXPECT_EQ(ds->test_starts()[0], 48);
}

TEST(SyntheticTest, SameSeedSameSeriesOtherSeedDiffers) {
  SyntheticOptions o;
  o.stations = 5;
  o.time_steps = 64;
  TimeSeriesMatrix a = MakeSyntheticSeries(o);
  TimeSeriesMatrix b = MakeSyntheticSeries(o);
  o.seed = 8;
  TimeSeriesMatrix c = MakeSyntheticSeries(o);
  ASSERT_EQ(a.values.size(), 5u * 64u);
  EXPECT_EQ(a.values, b.values);
  EXPECT_NE(a.values, c.values);
}

TEST(SyntheticTest, SignalDominatesNoise) {
  SyntheticOptions o;
  o.stations = 4;
  o.time_steps = 480;
  o.noise = 0.05;
  TimeSeriesMatrix m = MakeSyntheticSeries(o);
  // Lag-1 autocorrelation of a smooth signal with small noise is high.
  for (int64_t s = 0; s < m.columns; ++s) {
    double mean = 0;
    for (int64_t t = 0; t < m.rows; ++t) mean += m.at(t, s);
    mean /= m.rows;
    double num = 0, den = 0;
    for (int64_t t = 0; t < m.rows; ++t) {
      den += (m.at(t, s) - mean) * (m.at(t, s) - mean);
      if (t > 0) num += (m.at(t, s) - mean) * (m.at(t - 1, s) - mean);
    }
    EXPECT_GT(num / den, 0.9) << "station " << s;
  }
}

}  // namespace
}  // namespace hpt

namespace hpt {
namespace {

TEST(WindowDatasetGroupsTest, SamplesAreStationGroupsAtEveryStart) {
  // 6 stations, groups of 3 every 2: stations {0,1,2} and {2,3,4}.
  TimeSeriesMatrix m;
  m.rows = 10;
  m.columns = 6;
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.columns; ++c) m.values.push_back(float(100 * c + r));
  }
  WindowOptions o;
  o.input_steps = 2;
  o.horizon = 1;
  o.train = {0, 6};
  o.test = {6, 10};
  o.token_group = 3;
  o.group_stride = 2;
  auto ds = WindowDataset::Create(m, o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->num_tokens(), 3);
  EXPECT_EQ(ds->num_groups(), 2);
  EXPECT_EQ(ds->train_starts().size(), 4u * 2);  // starts 0..3, two groups each
  EXPECT_EQ(ds->test_starts().size(), 2u * 2);   // starts 6, 7
  HostTensor x, y;
  ds->Gather(ds->train_starts(), {3}, &x, &y);  // start 1, second group
  ASSERT_EQ(x.shape, (std::vector<int64_t>{1, 3, 2}));
  // Undo the normalisation: station 3's values at rows 1, 2; target row 3.
  const int64_t sample = ds->train_starts()[3];
  EXPECT_EQ(ds->StationOf(sample, 1), 3);
  auto raw = [&](float v, int64_t station) {
    return v * ds->stddev(station) + ds->mean(station);
  };
  EXPECT_NEAR(raw(x.data[1 * 2 + 0], 3), 301, 1e-3);
  EXPECT_NEAR(raw(x.data[1 * 2 + 1], 3), 302, 1e-3);
  EXPECT_NEAR(raw(y.data[1], 3), 303, 1e-3);
  EXPECT_NEAR(raw(y.data[0], 2), 203, 1e-3);
  o.token_group = 7;
  EXPECT_EQ(WindowDataset::Create(m, o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hpt
