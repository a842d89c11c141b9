// Loaders for the real data sets the paper trains on (../shared/data/README
// describes them), each producing a TimeSeriesMatrix of the target (rows:
// time steps, columns: stations or counties) plus what the splits need.
//
// AgWeatherNet hourly station files (weather): a padded header, blank
// cells, a trailing comma, "YYYY-MM-DD HH:MM" hours. Stations are joined on
// the hour over the span every station covers; a station's missing hours
// are filled by linear interpolation in time (nearest value at the ends),
// and the number filled is reported.
//
// County weekly COVID-19 records (covid): long format, one row per (county,
// week), pivoted to weeks x counties x features; the target feature's
// series of the `counties` counties with the largest training-period total
// form the matrix (the paper feeds 50 counties per sample).
//
//   ASSIGN_OR_RETURN(WeatherSeries w, LoadAgWeatherDir("data/weather", {}));
//   ASSIGN_OR_RETURN(CovidSeries c, LoadCovidCsv("data/covid/x.csv", {}));
#ifndef HPT_DATA_REAL_DATA_H_
#define HPT_DATA_REAL_DATA_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "data/series.h"
#include "data/text_file.h"

namespace hpt {

struct WeatherOptions {
  std::string target = "AIR_TEMP_F";
  DataLimits limits;  // where the files may be, their sizes, the grid's cells
};

struct WeatherSeries {
  TimeSeriesMatrix series;    // hours x stations (column names: file stems)
  std::vector<int> years;     // calendar year of each row
  int64_t filled_cells = 0;   // values interpolated
  // Rows without an hour: an empty TSTAMP_HOUR or AgWeatherNet's
  // 0000-00-00 placeholder (the first row of some station files).
  int64_t skipped_rows = 0;
};

// `files`: (name, text) pairs, one station each; errors name file:line.
absl::StatusOr<WeatherSeries> ParseAgWeather(
    const std::vector<std::pair<std::string, std::string>>& files,
    const WeatherOptions& options);
// Every AWN_*.csv in `dir`, in name order.
absl::StatusOr<WeatherSeries> LoadAgWeatherDir(const std::string& dir,
                                             const WeatherOptions& options);

struct CovidOptions {
  std::string target = "deaths";
  int counties = 50;
  // true: every county, in GISJOIN order (the job's samples are groups of
  // `counties` of them); false: only the `counties` with the largest
  // training-period total, largest first.
  bool all_counties = false;
  int64_t test_from_day = 209;  // weeks with Date < this train (paper)
  DataLimits limits;
};

struct CovidSeries {
  TimeSeriesMatrix series;                  // weeks x counties (target)
  std::vector<int64_t> days;                // Date of each row
  std::vector<std::string> feature_names;   // numeric columns pivoted
  // weeks x all counties x features, row-major, for feature-rich models.
  std::vector<float> features;
  int64_t all_counties = 0;
};

absl::StatusOr<CovidSeries> ParseCovidCsv(const std::string& text, const std::string& source,
                                        const CovidOptions& options);
absl::StatusOr<CovidSeries> LoadCovidCsv(const std::string& path, const CovidOptions& options);

}  // namespace hpt

#endif  // HPT_DATA_REAL_DATA_H_
