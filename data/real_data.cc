#include "data/real_data.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "data/text_file.h"
#include "data/timestamps.h"

namespace hpt {
namespace {

// Empty: missing. Otherwise a finite number or an error.
enum class Cell { kMissing, kNumber, kBad };
Cell ParseCell(const std::string& s, float* out) {
  if (s.empty()) return Cell::kMissing;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return Cell::kBad;
  *out = float(v);
  return Cell::kNumber;
}

int Find(const std::vector<std::string>& header, const std::string& name) {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : int(it - header.begin());
}

// "YYYY-MM-DD HH:MM" -> hours since the epoch; also the year.
bool ParseHour(const std::string& s, int64_t* hour, int* year) {
  int y, mo, d, h, mi;
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d", &y, &mo, &d, &h, &mi) != 5) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23) return false;
  *hour = DaysFromCivil(y, mo, d) * 24 + h;
  *year = y;
  return true;
}

// One station file's target by hour, and each hour's year.
struct WeatherStation {
  std::map<int64_t, float> values;  // hour -> target (blank cells absent)
  std::map<int64_t, int> years;
};

// Reads one AgWeatherNet station file; rows without an hour are skipped and
// counted in `skipped_rows`. Errors name the file, line and column.
absl::StatusOr<WeatherStation> ParseWeatherStation(const std::string& name,
                                                   const std::string& text,
                                                   const WeatherOptions& options,
                                                   int64_t* skipped_rows) {
  WeatherStation station;
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  while (!lines.empty() && absl::StripAsciiWhitespace(lines.back()).empty()) lines.pop_back();
  if (lines.size() < 2) return absl::InvalidArgumentError(absl::StrCat(name, ": no data rows"));
  const std::vector<std::string> header = SplitTrimmedCells(lines[0]);
  const int hour_col = Find(header, "TSTAMP_HOUR");
  const int target_col = Find(header, options.target);
  if (hour_col < 0 || target_col < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ":1: header lacks ", hour_col < 0 ? "TSTAMP_HOUR" : options.target,
        " (data.weather.target names the column to forecast)"));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    RETURN_IF_ERROR(CheckLoadingEvery(i, name, options.limits));
    const std::vector<std::string> cells = SplitTrimmedCells(lines[i]);
    const size_t line = i + 1;
    // A row without an hour is skipped and counted, whatever else it holds.
    const absl::string_view stamp = int(cells.size()) > hour_col
                                        ? absl::StripAsciiWhitespace(cells[hour_col])
                                        : absl::string_view();
    if (stamp.empty() || absl::StartsWith(stamp, "0000-00-00")) {
      ++*skipped_rows;
      continue;
    }
    if (int(cells.size()) <= std::max(hour_col, target_col)) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", line, ": ", cells.size(),
                                                     " cells; ", options.target, " is column ",
                                                     target_col + 1));
    }
    int64_t hour;
    int year;
    if (!ParseHour(cells[hour_col], &hour, &year)) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", line, ":", hour_col + 1,
                                                     ": TSTAMP_HOUR '", cells[hour_col],
                                                     "' is not YYYY-MM-DD HH:MM"));
    }
    float v;
    const Cell c = ParseCell(cells[target_col], &v);
    if (c == Cell::kBad) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", line, ":", target_col + 1, ": ",
                                                     options.target, " '", cells[target_col],
                                                     "' is not a number"));
    }
    station.years[hour] = year;
    if (c == Cell::kNumber) station.values.emplace(hour, v);
  }
  if (station.values.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": every ", options.target, " cell is blank"));
  }
  return station;
}

// `values` at `hour`: the value, or interpolated linearly between the
// nearest hours around it (held flat past either end); `filled` counts it.
float ValueAtHour(const std::map<int64_t, float>& values, int64_t hour, int64_t* filled) {
  auto after = values.lower_bound(hour);
  if (after != values.end() && after->first == hour) return after->second;
  ++*filled;
  if (after == values.end()) return std::prev(after)->second;
  if (after == values.begin()) return after->second;
  auto before = std::prev(after);
  const double t = double(hour - before->first) / double(after->first - before->first);
  return float(before->second + t * (after->second - before->second));
}

}  // namespace

absl::StatusOr<WeatherSeries> ParseAgWeather(
    const std::vector<std::pair<std::string, std::string>>& files,
    const WeatherOptions& options) {
  if (files.empty()) return absl::InvalidArgumentError("data.weather: no station files");
  std::vector<WeatherStation> stations;
  WeatherSeries out;
  for (const auto& [name, text] : files) {
    ASSIGN_OR_RETURN(WeatherStation station,
                     ParseWeatherStation(name, text, options, &out.skipped_rows));
    stations.push_back(std::move(station));
  }
  // The span all stations cover.
  int64_t first = INT64_MIN, last = INT64_MAX;
  for (const WeatherStation& s : stations) {
    first = std::max(first, s.years.begin()->first);
    last = std::min(last, s.years.rbegin()->first);
  }
  if (first > last) {
    return absl::InvalidArgumentError("data.weather: the stations' periods do not overlap");
  }
  TimeSeriesMatrix& m = out.series;
  m.rows = last - first + 1;
  m.columns = int64_t(files.size());
  RETURN_IF_ERROR(CheckCells("data.weather: the stations' common hours", m.rows, m.columns,
                             options.limits));
  m.values.assign(m.rows * m.columns, 0.0f);
  for (const auto& [name, text] : files) {
    std::string stem = name.substr(name.find_last_of('/') + 1);
    if (absl::EndsWith(stem, ".csv")) stem.resize(stem.size() - 4);
    m.column_names.push_back(stem);
  }
  m.times.resize(m.rows);
  for (int64_t r = 0; r < m.rows; ++r) m.times[r] = (first + r) * 3600;
  for (int64_t r = 0; r < m.rows; ++r) {
    const int64_t hour = first + r;
    // The year of the hour from any station that has it, else the last.
    int year = 0;
    for (const WeatherStation& s : stations) {
      auto it = s.years.find(hour);
      if (it != s.years.end()) {
        year = it->second;
        break;
      }
    }
    if (year == 0) year = out.years.empty() ? 0 : out.years.back();
    out.years.push_back(year);
  }
  for (int64_t c = 0; c < m.columns; ++c) {
    for (int64_t r = 0; r < m.rows; ++r) {
      m.values[r * m.columns + c] = ValueAtHour(stations[c].values, first + r, &out.filled_cells);
    }
  }
  return out;
}

absl::StatusOr<WeatherSeries> LoadAgWeatherDir(const std::string& dir,
                                             const WeatherOptions& options) {
  std::vector<std::string> names;
  absl::StatusOr<std::string> resolved = ResolveDataPath(dir, options.limits, /*directory=*/true);
  if (!resolved.ok()) return resolved.status();
  DIR* d = opendir(resolved->c_str());
  if (d == nullptr) return absl::NotFoundError(absl::StrCat(dir, ": cannot open directory"));
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (absl::StartsWith(n, "AWN_") && absl::EndsWith(n, ".csv")) names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    return absl::NotFoundError(absl::StrCat(dir, ": no AWN_*.csv station files"));
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& n : names) {
    const std::string path = dir + "/" + n;
    // Each entry is checked on its own: a link in the folder may point
    // outside the roots.
    absl::StatusOr<std::string> text = ReadTextFile(path, options.limits);
    if (!text.ok()) return text.status();
    files.emplace_back(path, std::move(*text));
  }
  return ParseAgWeather(files, options);
}

namespace {

// A COVID file's cells: each county's features by day, in the order of
// `feature_cols`, and the days the file has.
struct CovidRows {
  std::map<std::string, std::map<int64_t, std::vector<float>>> by_county;
  std::map<int64_t, int> days;  // day -> its week's index (set later)
};

// Reads the data rows below the header; errors name the line and column.
absl::Status ReadCovidRows(const std::vector<absl::string_view>& lines,
                           const std::vector<std::string>& header, int county_col, int day_col,
                           const std::vector<int>& feature_cols, const std::string& source,
                           const DataLimits& limits, CovidRows* rows) {
  for (size_t i = 1; i < lines.size(); ++i) {
    RETURN_IF_ERROR(CheckLoadingEvery(i, source, limits));
    const std::vector<std::string> cells = SplitTrimmedCells(lines[i]);
    const size_t line = i + 1;
    if (cells.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": expected ",
                                                     header.size(), " columns, got ",
                                                     cells.size()));
    }
    int64_t day;
    if (!absl::SimpleAtoi(cells[day_col], &day)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ":", day_col + 1,
                                                     ": Date '", cells[day_col],
                                                     "' is not a day number"));
    }
    std::vector<float> f(feature_cols.size());
    for (size_t j = 0; j < feature_cols.size(); ++j) {
      const int c = feature_cols[j];
      if (ParseCell(cells[c], &f[j]) != Cell::kNumber) {
        return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ":", c + 1, ": ",
                                                       header[c], " '", cells[c],
                                                       "' is not a number"));
      }
    }
    if (!rows->by_county[cells[county_col]].emplace(day, std::move(f)).second) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": county ",
                                                     cells[county_col], " has Date ", day,
                                                     " twice"));
    }
    rows->days[day] = 0;
  }
  return absl::OkStatus();
}

// The target's series over the counties kept: all of them in GISJOIN
// order, or the `options.counties` with the most target before the test
// days.
void SetTargetSeries(const CovidRows& rows, const std::vector<std::pair<double, std::string>>& by_total,
                     size_t target, const CovidOptions& options, CovidSeries* out) {
  const int64_t weeks = int64_t(rows.days.size()), counties = int64_t(rows.by_county.size());
  const int64_t nf = int64_t(out->feature_names.size());
  const int64_t keep =
      options.all_counties ? counties : std::min<int64_t>(options.counties, counties);
  std::vector<std::string> names;
  for (const auto& [county, by_day] : rows.by_county) names.push_back(county);
  TimeSeriesMatrix& m = out->series;
  m.rows = weeks;
  m.columns = keep;
  m.values.assign(weeks * keep, 0.0f);
  for (int64_t k = 0; k < keep; ++k) {
    const std::string& county = options.all_counties ? names[k] : by_total[k].second;
    const int64_t col = int64_t(std::find(names.begin(), names.end(), county) - names.begin());
    m.column_names.push_back(county);
    for (int64_t w = 0; w < weeks; ++w) {
      m.values[w * keep + k] = out->features[(w * counties + col) * nf + target];
    }
  }
}

}  // namespace

absl::StatusOr<CovidSeries> ParseCovidCsv(const std::string& text, const std::string& source,
                                        const CovidOptions& options) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  while (!lines.empty() && absl::StripAsciiWhitespace(lines.back()).empty()) lines.pop_back();
  if (lines.size() < 2) return absl::InvalidArgumentError(absl::StrCat(source, ": no data rows"));
  const std::vector<std::string> header = SplitTrimmedCells(lines[0]);
  const int county_col = Find(header, "GISJOIN");
  const int day_col = Find(header, "Date");
  if (county_col < 0 || day_col < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":1: header lacks ", county_col < 0 ? "GISJOIN" : "Date"));
  }
  CovidSeries out;
  std::vector<int> feature_cols;
  for (int c = 0; c < int(header.size()); ++c) {
    if (c == county_col || c == day_col || header[c] == "index") continue;
    feature_cols.push_back(c);
    out.feature_names.push_back(header[c]);
  }
  const auto target_it =
      std::find(out.feature_names.begin(), out.feature_names.end(), options.target);
  if (target_it == out.feature_names.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":1: header lacks the target column '", options.target, "'"));
  }
  const size_t target = size_t(target_it - out.feature_names.begin());
  CovidRows rows;
  RETURN_IF_ERROR(ReadCovidRows(lines, header, county_col, day_col, feature_cols, source,
                                options.limits, &rows));
  int index = 0;
  for (auto& [day, i] : rows.days) {
    i = index++;
    out.days.push_back(day);
  }
  const int64_t weeks = int64_t(rows.days.size()), counties = int64_t(rows.by_county.size());
  const int64_t nf = int64_t(feature_cols.size());
  out.all_counties = counties;
  RETURN_IF_ERROR(CheckCells(absl::StrCat(source, ": weeks x counties x features"),
                             weeks * counties, nf, options.limits));
  out.features.assign(weeks * counties * nf, 0.0f);
  std::vector<std::pair<double, std::string>> by_total;  // (-target total, county)
  int64_t c = 0;
  for (const auto& [county, by_day] : rows.by_county) {
    if (int64_t(by_day.size()) != weeks) {
      std::vector<int64_t> missing;  // the file's days this county lacks
      for (const auto& [day, week] : rows.days) {
        if (by_day.count(day) == 0) missing.push_back(day);
      }
      const size_t shown = std::min<size_t>(missing.size(), 5);
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": county ", county, " has ", by_day.size(), " weeks; the file has ", weeks,
          ": it lacks Date ", absl::StrJoin(missing.begin(), missing.begin() + shown, ", "),
          missing.size() > shown ? absl::StrCat(" and ", missing.size() - shown, " more") : "",
          ". Every county needs a row for every Date: add the rows, or remove the county"));
    }
    double total = 0;
    for (const auto& [day, f] : by_day) {
      std::copy(f.begin(), f.end(), out.features.begin() + (rows.days[day] * counties + c) * nf);
      if (day < options.test_from_day) total += f[target];
    }
    by_total.emplace_back(-total, county);
    ++c;
  }
  if (options.counties < 1) {
    return absl::InvalidArgumentError("data.covid.counties must be positive");
  }
  std::sort(by_total.begin(), by_total.end());
  SetTargetSeries(rows, by_total, target, options, &out);
  return out;
}

absl::StatusOr<CovidSeries> LoadCovidCsv(const std::string& path, const CovidOptions& options) {
  absl::StatusOr<std::string> text = ReadTextFile(path, options.limits);
  if (!text.ok()) return text.status();
  return ParseCovidCsv(*text, path, options);
}

}  // namespace hpt
