#include "coordinator/job_data.h"

#include "absl/strings/str_cat.h"
#include "data/synthetic.h"
#include "data/wide_csv.h"

namespace hpt {

absl::StatusOr<WindowDataset> BuildJobData(const DataSpec& spec) {
  TimeSeriesMatrix series;
  WindowOptions options;
  options.window = spec.window();
  options.horizon = spec.horizon();
  if (spec.has_synthetic()) {
    SyntheticOptions s;
    s.stations = spec.synthetic().stations();
    s.time_steps = spec.synthetic().time_steps();
    s.seed = spec.synthetic().seed();
    s.noise = spec.synthetic().noise();
    series = MakeSyntheticSeries(s);
    // The last fifth of the series is held out for testing.
    const int64_t split = series.rows * 4 / 5;
    options.train = {0, split};
    options.test = {split, series.rows};
  } else {
    const CsvData& csv = spec.csv();
    WideCsvOptions csv_options;
    csv_options.header = csv.header() == CsvData::PRESENT ? CsvHeader::kPresent
                         : csv.header() == CsvData::ABSENT ? CsvHeader::kAbsent
                                                           : CsvHeader::kAuto;
    absl::StatusOr<TimeSeriesMatrix> loaded = LoadWideCsv(csv.path(), csv_options);
    if (!loaded.ok()) {
      // A file the coordinator cannot read is the submitter's input error.
      return absl::InvalidArgumentError(
          absl::StrCat("data.csv: ", loaded.status().message()));
    }
    series = std::move(*loaded);
    options.train = {csv.train_begin_row(),
                     csv.train_end_row() > 0 ? csv.train_end_row() : series.rows};
    options.test = {csv.test_begin_row(), csv.test_end_row()};
    if (csv.test_end_row() == 0) options.test = {0, 0};
  }
  return WindowDataset::Create(std::move(series), options);
}

}  // namespace hpt
