#include "coordinator/training/job_data.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "data/data_units.h"
#include "data/real_data.h"
#include "data/swe.h"
#include "data/synthetic.h"
#include "data/timestamps.h"
#include "data/wide_csv.h"

namespace hpt {

namespace {

// `status` with `field` before its message; its code kept (a path outside
// the roots stays PERMISSION_DENIED, a missing file FAILED_PRECONDITION, a
// load past its time DEADLINE_EXCEEDED, a cancelled one CANCELLED; a
// loader's NOT_FOUND, a directory without its files, becomes
// FAILED_PRECONDITION: NOT_FOUND means "no such job"), any other loader
// error the submitter's INVALID_ARGUMENT.
absl::Status InField(const char* field, const absl::Status& status) {
  const absl::StatusCode code = status.code();
  const std::string message = absl::StrCat(field, ": ", status.message());
  if (code == absl::StatusCode::kPermissionDenied) return absl::PermissionDeniedError(message);
  if (code == absl::StatusCode::kNotFound || code == absl::StatusCode::kFailedPrecondition) {
    return absl::FailedPreconditionError(message);
  }
  if (code == absl::StatusCode::kDeadlineExceeded) return absl::DeadlineExceededError(message);
  if (code == absl::StatusCode::kCancelled) return absl::CancelledError(message);
  return absl::InvalidArgumentError(message);
}

// Each source's loader: the series into `series`, its train and test rows
// into `windows`, what was loaded into `summary`.
using Loader = absl::Status (*)(const DataSpec&, const DataLimits&, TimeSeriesMatrix* series,
                                WindowOptions* windows, DataSummary* summary);

absl::Status LoadSynthetic(const DataSpec& spec, const DataLimits& limits,
                           TimeSeriesMatrix* series, WindowOptions* windows,
                           DataSummary* summary) {
  SyntheticOptions s;
  s.stations = spec.synthetic().stations();
  s.time_steps = spec.synthetic().time_steps();
  s.seed = spec.synthetic().seed();
  s.noise = spec.synthetic().noise();
  RETURN_IF_ERROR(CheckCells("data.synthetic", s.time_steps, s.stations, limits));
  *series = MakeSyntheticSeries(s);
  summary->set_source("synthetic");
  // The last fifth of the series is held out for testing.
  const int64_t split = series->rows * 4 / 5;
  windows->train = {0, split};
  windows->test = {split, series->rows};
  return absl::OkStatus();
}

absl::Status LoadWeather(const DataSpec& spec, const DataLimits& limits,
                         TimeSeriesMatrix* series, WindowOptions* windows,
                         DataSummary* summary) {
  WeatherOptions o;
  o.limits = limits;
  if (!spec.weather().target().empty()) o.target = spec.weather().target();
  absl::StatusOr<WeatherSeries> loaded = LoadAgWeatherDir(spec.weather().dir(), o);
  if (!loaded.ok()) return InField("data.weather", loaded.status());
  const int year = spec.weather().test_year() > 0 ? spec.weather().test_year() : 2020;
  const auto first = std::find(loaded->years.begin(), loaded->years.end(), year);
  const auto last = std::find_if(first, loaded->years.end(), [&](int y) { return y != year; });
  if (first == loaded->years.end()) {
    const auto [lo, hi] = std::minmax_element(loaded->years.begin(), loaded->years.end());
    return absl::InvalidArgumentError(
        absl::StrCat("data.weather.test_year ", year, " is not in the stations' common period",
                     lo == loaded->years.end() ? "" : absl::StrCat(" (", *lo, " to ", *hi, ")"),
                     ": give a year in it (hptctl submit --test_year=YEAR)"));
  }
  const int64_t b = first - loaded->years.begin(), e = last - loaded->years.begin();
  const std::vector<int64_t>& times = loaded->series.times;
  summary->set_split(absl::StrCat(
      "test on ", year, " (rows ", b, "-", e - 1,
      times.size() == loaded->years.size()
          ? absl::StrCat(", ", FormatTimestamp(times[b]), " to ", FormatTimestamp(times[e - 1]))
          : "",
      "), train on the ", loaded->years.size() - (e - b),
      " rows of the other years (data.weather.test_year)"));
  summary->set_source("weather");
  summary->set_skipped_rows(loaded->skipped_rows);
  summary->set_filled_cells(loaded->filled_cells);
  *series = std::move(loaded->series);
  windows->train = {0, b};
  windows->extra_train = {{e, series->rows}};
  windows->test = {b, e};  // a train range may be empty: the test year comes first
  return absl::OkStatus();
}

// Training windows in rows [0, split); test windows forecast a row at or
// after `split`, their inputs reaching back into the training rows (the
// targets never do).
void SplitAt(int64_t split, int64_t rows, WindowOptions* windows) {
  windows->train = {0, split};
  windows->test = {std::max<int64_t>(0, split - windows->input_steps - windows->horizon + 1),
                   rows};
}

absl::Status LoadSwe(const DataSpec& spec, const DataLimits& limits, TimeSeriesMatrix* series,
                     WindowOptions* windows, DataSummary* summary) {
  absl::StatusOr<std::vector<SnotelStation>> stations =
      LoadSnotelStations(spec.swe().stations_csv(), limits);
  if (!stations.ok()) return InField("data.swe", stations.status());
  SweOptions o;
  o.days = spec.swe().days();
  RETURN_IF_ERROR(CheckCells("data.swe", o.days, int64_t(stations->size()), limits));
  o.seed = spec.swe().seed();
  *series = MakeSweSeries(*stations, o);
  summary->set_source("swe (synthetic series over real SNOTEL stations)");
  // The last water year tests; its windows may look back into training
  // days, their targets never do.
  SplitAt(series->rows - 365, series->rows, windows);
  summary->set_split(absl::StrCat("test on the last water year (days ", series->rows - 365, "-",
                                  series->rows - 1, "), train on the ", series->rows - 365,
                                  " days before"));
  return absl::OkStatus();
}

absl::Status LoadCovid(const DataSpec& spec, const DataLimits& limits, TimeSeriesMatrix* series,
                       WindowOptions* windows, DataSummary* summary) {
  CovidOptions o;
  o.limits = limits;
  if (!spec.covid().target().empty()) o.target = spec.covid().target();
  if (spec.covid().counties() > 0) o.counties = spec.covid().counties();
  o.all_counties = true;
  if (spec.covid().test_from_day() > 0) o.test_from_day = spec.covid().test_from_day();
  absl::StatusOr<CovidSeries> loaded = LoadCovidCsv(spec.covid().path(), o);
  if (!loaded.ok()) return InField("data.covid", loaded.status());
  const std::vector<int64_t>& days = loaded->days;
  const int64_t split = std::lower_bound(days.begin(), days.end(), o.test_from_day) - days.begin();
  if (split == 0 || split == int64_t(days.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.covid.test_from_day ", o.test_from_day, " leaves ",
        split == 0 ? "no week to train on" : "no week to test on", ": the file's Dates run ",
        days.front(), " to ", days.back(), "; give one inside them"));
  }
  summary->set_split(absl::StrCat("test on the ", int64_t(days.size()) - split, " weeks from Date ",
                                  days[split], " (data.covid.test_from_day ", o.test_from_day,
                                  "), train on the ", split, " before"));
  *series = std::move(loaded->series);
  summary->set_source("covid");
  // Samples: every group of `counties` consecutive counties (GISJOIN
  // order), one every group_stride, at every date; the input is each
  // county's own history of the target, the target its next week.
  windows->token_group = std::min<int64_t>(o.counties, series->columns);
  windows->group_stride = spec.covid().group_stride() > 0 ? spec.covid().group_stride() : 10;
  SplitAt(split, series->rows, windows);  // test samples forecast a week from the split on
  return absl::OkStatus();
}

// The share of a series' rows that tests when a source gives no split:
// the last fifth in time, so the test forecasts what training never saw
// (a random split would test on the neighbours of training windows).
constexpr double kDefaultTestShare = 0.2;

// Training on the first rows, testing on the last kDefaultTestShare (at
// least one window's worth), said in the summary.
absl::Status DefaultSplit(const TimeSeriesMatrix& series, WindowOptions* windows,
                          DataSummary* summary) {
  const int64_t rows = series.rows;
  const int64_t span = windows->input_steps + windows->horizon;
  if (rows < span + 1) {  // one window to train on, one target to test
    return absl::InvalidArgumentError(absl::StrCat(
        "data.csv: the file's ", rows, " data rows are too few: a sample spans data.input_steps (",
        windows->input_steps, ") + data.horizon (", windows->horizon, ") = ", span,
        " rows, and training and testing need at least ", span + 1,
        "; give a longer series, or lower data.input_steps or data.horizon"));
  }
  const int64_t test_rows = std::max<int64_t>(
      1, int64_t(std::llround(kDefaultTestShare * double(rows))));
  const int64_t split = std::max<int64_t>(span, rows - test_rows);
  SplitAt(split, rows, windows);
  // The test rows' times where the data has them.
  const std::string from =
      series.times.empty() ? "" : absl::StrCat(", from ", FormatTimestamp(series.times[split]));
  summary->set_split(absl::StrCat(
      "train on rows 0-", split - 1, ", test on the last ", rows - split, " (rows ", split, "-",
      rows - 1, from, "): the last 20 % in time, as the data gave no split"));
  return absl::OkStatus();
}

absl::Status LoadCsv(const DataSpec& spec, const DataLimits& limits, TimeSeriesMatrix* series,
                     WindowOptions* windows, DataSummary* summary) {
  const CsvData& csv = spec.csv();
  WideCsvOptions csv_options;
  csv_options.header = csv.header() == CsvData::PRESENT  ? CsvHeader::kPresent
                       : csv.header() == CsvData::ABSENT ? CsvHeader::kAbsent
                                                         : CsvHeader::kAuto;
  csv_options.limits = limits;
  csv_options.missing = spec.missing() == "interpolate" ? MissingCells::kInterpolate
                        : spec.missing() == "drop_rows" ? MissingCells::kDropRows
                                                        : MissingCells::kRefuse;
  WideCsvGaps gaps;
  csv_options.gaps = &gaps;
  csv_options.time_column = csv.time_column();
  absl::StatusOr<TimeSeriesMatrix> loaded = LoadWideCsv(csv.path(), csv_options);
  if (!loaded.ok()) return InField("data.csv", loaded.status());
  summary->set_filled_cells(gaps.filled);
  summary->set_skipped_rows(gaps.dropped);
  *series = std::move(*loaded);
  summary->set_source("csv");
  series->unit = TakeCommonUnit(&series->column_names);
  if (csv.train_begin_row() == 0 && csv.train_end_row() == 0 && csv.test_end_row() == 0 &&
      csv.more_train_rows_size() == 0) {
    return DefaultSplit(*series, windows, summary);
  }
  windows->train = {csv.train_begin_row(),
                    csv.train_end_row() > 0 ? csv.train_end_row() : series->rows};
  for (const RowSpan& r : csv.more_train_rows()) {
    windows->extra_train.push_back({r.begin(), r.end()});
  }
  windows->test = {csv.test_begin_row(), csv.test_end_row()};
  if (csv.test_end_row() == 0) {
    windows->test = {0, 0};
    summary->set_split(
        "training rows given and no test rows: no test split, so no test metrics (give "
        "data.csv.test_begin_row and test_end_row; hptctl submit --test_rows=BEGIN:END)");
  }
  return absl::OkStatus();
}

// One data source: the file it reads and the spec field that names it
// (field empty: it reads none), and its loader. The path check and the load
// both start here.
struct DataSource {
  const char* field = "";
  std::string path;
  bool directory = false;
  Loader load = LoadCsv;
};

DataSource SourceOf(const DataSpec& spec) {
  switch (spec.source_case()) {
    case DataSpec::kSynthetic:
      return {"", "", false, LoadSynthetic};
    case DataSpec::kWeather:
      return {"data.weather", spec.weather().dir(), /*directory=*/true, LoadWeather};
    case DataSpec::kSwe:
      return {"data.swe", spec.swe().stations_csv(), false, LoadSwe};
    case DataSpec::kCovid:
      return {"data.covid", spec.covid().path(), false, LoadCovid};
    case DataSpec::kCsv:
      return {"data.csv", spec.csv().path(), false, LoadCsv};
    case DataSpec::SOURCE_NOT_SET:  // normalisation gives every spec a source
      break;
  }
  return {};
}

}  // namespace

absl::Status CheckJobDataPaths(const DataSpec& spec, const DataLimits& limits) {
  const DataSource source = SourceOf(spec);
  if (*source.field == '\0') return absl::OkStatus();  // synthetic: no file
  absl::StatusOr<std::string> resolved = ResolveDataPath(source.path, limits, source.directory);
  return resolved.ok() ? absl::OkStatus() : InField(source.field, resolved.status());
}

absl::StatusOr<WindowDataset> BuildJobData(const DataSpec& spec, DataSummary* summary,
                                           const DataLimits& limits) {
  DataSummary local;
  if (summary == nullptr) summary = &local;
  *summary = DataSummary();
  TimeSeriesMatrix series;
  WindowOptions windows;
  windows.input_steps = spec.input_steps();
  windows.horizon = spec.horizon();
  RETURN_IF_ERROR(SourceOf(spec).load(spec, limits, &series, &windows, summary));
  const std::string validation = CarveValidation(spec.validation_share(), &windows);
  if (spec.validation_share() > 0 && validation.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.validation_share: the training rows are too few to hold out ",
        spec.validation_share(), " of them and keep a window of ", windows.input_steps,
        " steps and its horizon on each side: give more rows, or validation_share 0"));
  }
  if (!validation.empty()) {
    summary->set_split(summary->split().empty() ? validation
                                                : absl::StrCat(summary->split(), "; ", validation));
  }
  summary->set_rows(series.rows);
  summary->set_columns(series.columns);
  for (const std::string& name : series.column_names) summary->add_stations(name);
  summary->set_unit(series.unit);
  if (!series.times.empty()) {
    summary->set_time_column(series.time_name);
    summary->set_time_step_s(TypicalStep(series.times));
    const bool dates = summary->time_step_s() % 86400 == 0;
    summary->set_first_time(FormatTimestamp(series.times.front(), dates));
    summary->set_last_time(FormatTimestamp(series.times.back(), dates));
  }
  absl::StatusOr<WindowDataset> dataset = WindowDataset::Create(std::move(series), windows);
  if (dataset.ok()) {
    summary->set_tokens(dataset->num_tokens());
    summary->set_test_samples(int64_t(dataset->test_starts().size()));
  }
  return dataset;
}

int64_t SampleTokens(const DataSummary& summary) {
  return summary.tokens() > 0 ? summary.tokens() : summary.columns();
}

}  // namespace hpt
