#include "coordinator/job_data.h"

#include "absl/strings/str_cat.h"
#include <algorithm>

#include "data/real_data.h"
#include "data/swe.h"
#include "data/synthetic.h"
#include "data/wide_csv.h"

namespace hpt {

namespace {

// `status` with `field` before its message; its code kept (a path outside
// the roots stays PERMISSION_DENIED, a missing file NOT_FOUND, a load past
// its time DEADLINE_EXCEEDED, a cancelled one CANCELLED), any other
// loader error the submitter's INVALID_ARGUMENT.
absl::Status InField(const char* field, const absl::Status& status) {
  const absl::StatusCode code = status.code();
  const std::string message = absl::StrCat(field, ": ", status.message());
  if (code == absl::StatusCode::kPermissionDenied) return absl::PermissionDeniedError(message);
  if (code == absl::StatusCode::kNotFound) return absl::NotFoundError(message);
  if (code == absl::StatusCode::kDeadlineExceeded) return absl::DeadlineExceededError(message);
  if (code == absl::StatusCode::kCancelled) return absl::CancelledError(message);
  return absl::InvalidArgumentError(message);
}

}  // namespace

absl::Status CheckJobDataPaths(const DataSpec& spec, const DataLimits& limits) {
  absl::StatusOr<std::string> resolved = std::string();
  const char* field = "";
  if (spec.has_weather()) {
    field = "data.weather";
    resolved = ResolveDataPath(spec.weather().dir(), limits, /*directory=*/true);
  } else if (spec.has_swe()) {
    field = "data.swe";
    resolved = ResolveDataPath(spec.swe().stations_csv(), limits);
  } else if (spec.has_covid()) {
    field = "data.covid";
    resolved = ResolveDataPath(spec.covid().path(), limits);
  } else if (spec.has_csv()) {
    field = "data.csv";
    resolved = ResolveDataPath(spec.csv().path(), limits);
  }
  return resolved.ok() ? absl::OkStatus() : InField(field, resolved.status());
}

absl::StatusOr<WindowDataset> BuildJobData(const DataSpec& spec, DataSummary* summary,
                                           const DataLimits& limits) {
  DataSummary local;
  if (summary == nullptr) summary = &local;
  *summary = DataSummary();
  TimeSeriesMatrix series;
  WindowOptions options;
  options.input_steps = spec.input_steps();
  options.horizon = spec.horizon();
  if (spec.has_synthetic()) {
    SyntheticOptions s;
    s.stations = spec.synthetic().stations();
    s.time_steps = spec.synthetic().time_steps();
    s.seed = spec.synthetic().seed();
    s.noise = spec.synthetic().noise();
    if (absl::Status c = CheckCells("data.synthetic", s.time_steps, s.stations, limits); !c.ok()) {
      return c;
    }
    series = MakeSyntheticSeries(s);
    summary->set_source("synthetic");
    // The last fifth of the series is held out for testing.
    const int64_t split = series.rows * 4 / 5;
    options.train = {0, split};
    options.test = {split, series.rows};
  } else if (spec.has_weather()) {
    WeatherOptions o;
    o.limits = limits;
    if (!spec.weather().target().empty()) o.target = spec.weather().target();
    absl::StatusOr<WeatherSeries> loaded = LoadAgWeatherDir(spec.weather().dir(), o);
    if (!loaded.ok()) return InField("data.weather", loaded.status());
    const int year = spec.weather().test_year() > 0 ? spec.weather().test_year() : 2020;
    const auto first = std::find(loaded->years.begin(), loaded->years.end(), year);
    const auto last = std::find_if(first, loaded->years.end(), [&](int y) { return y != year; });
    if (first == loaded->years.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.weather.test_year ", year, " is not in the stations' common period"));
    }
    const int64_t b = first - loaded->years.begin(), e = last - loaded->years.begin();
    summary->set_source("weather");
    summary->set_skipped_rows(loaded->skipped_rows);
    summary->set_filled_cells(loaded->filled_cells);
    series = std::move(loaded->series);
    options.train = {0, b};
    options.extra_train = {{e, series.rows}};
    options.test = {b, e};  // a train range may be empty: the test year comes first
  } else if (spec.has_swe()) {
    absl::StatusOr<std::vector<SnotelStation>> stations =
        LoadSnotelStations(spec.swe().stations_csv(), limits);
    if (!stations.ok()) return InField("data.swe", stations.status());
    SweOptions o;
    o.days = spec.swe().days();
    if (absl::Status c = CheckCells("data.swe", o.days, int64_t(stations->size()), limits);
        !c.ok()) {
      return c;
    }
    o.seed = spec.swe().seed();
    series = MakeSweSeries(*stations, o);
    summary->set_source("swe (synthetic series over real SNOTEL stations)");
    // The last water year tests; its windows may look back into training
    // days, their targets never do.
    const int64_t split = series.rows - 365;
    options.train = {0, split};
    options.test = {std::max<int64_t>(0, split - options.input_steps - options.horizon + 1),
                    series.rows};
  } else if (spec.has_covid()) {
    CovidOptions o;
    o.limits = limits;
    if (!spec.covid().target().empty()) o.target = spec.covid().target();
    if (spec.covid().counties() > 0) o.counties = spec.covid().counties();
    o.all_counties = true;
    if (spec.covid().test_from_day() > 0) o.test_from_day = spec.covid().test_from_day();
    absl::StatusOr<CovidSeries> loaded = LoadCovidCsv(spec.covid().path(), o);
    if (!loaded.ok()) return InField("data.covid", loaded.status());
    const int64_t split = std::lower_bound(loaded->days.begin(), loaded->days.end(),
                                           o.test_from_day) - loaded->days.begin();
    series = std::move(loaded->series);
    summary->set_source("covid");
    // Samples: every group of `counties` consecutive counties (GISJOIN
    // order), one every group_stride, at every date; the input is each
    // county's own history of the target, the target its next week.
    options.token_group = std::min<int64_t>(o.counties, series.columns);
    options.group_stride = spec.covid().group_stride() > 0 ? spec.covid().group_stride() : 10;
    options.train = {0, split};
    // Test samples forecast a week at or after the split; their input
    // windows may reach back into the training weeks.
    options.test = {std::max<int64_t>(0, split - options.input_steps - options.horizon + 1),
                    series.rows};
  } else {
    const CsvData& csv = spec.csv();
    WideCsvOptions csv_options;
    csv_options.header = csv.header() == CsvData::PRESENT ? CsvHeader::kPresent
                         : csv.header() == CsvData::ABSENT ? CsvHeader::kAbsent
                                                           : CsvHeader::kAuto;
    csv_options.limits = limits;
    absl::StatusOr<TimeSeriesMatrix> loaded = LoadWideCsv(csv.path(), csv_options);
    if (!loaded.ok()) return InField("data.csv", loaded.status());
    series = std::move(*loaded);
    summary->set_source("csv");
    options.train = {csv.train_begin_row(),
                     csv.train_end_row() > 0 ? csv.train_end_row() : series.rows};
    for (const RowSpan& r : csv.more_train_rows()) {
      options.extra_train.push_back({r.begin(), r.end()});
    }
    options.test = {csv.test_begin_row(), csv.test_end_row()};
    if (csv.test_end_row() == 0) options.test = {0, 0};
  }
  summary->set_rows(series.rows);
  summary->set_columns(series.columns);
  return WindowDataset::Create(std::move(series), options);
}

}  // namespace hpt
