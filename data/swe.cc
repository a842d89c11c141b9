#include "data/swe.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "data/text_file.h"

namespace hpt {
namespace {

constexpr double kPi = 3.14159265358979323846;

}  // namespace

absl::StatusOr<std::vector<SnotelStation>> ParseSnotelStations(const std::string& text,
                                                               const std::string& source) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  while (!lines.empty() && absl::StripAsciiWhitespace(lines.back()).empty()) lines.pop_back();
  if (lines.size() < 2) return absl::InvalidArgumentError(absl::StrCat(source, ": no stations"));
  const std::vector<std::string> header = SplitTrimmedCells(lines[0]);
  const std::vector<std::string> wanted = {"Station Name", "Elevation_x", "Latitude_x",
                                           "Longitude_x",  "Aspect_tif_x", "Slope_tif1_x",
                                           "LandCover"};
  std::vector<int> col;
  for (const std::string& w : wanted) {
    auto it = std::find(header.begin(), header.end(), w);
    if (it == header.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":1: header lacks '", w, "'"));
    }
    col.push_back(int(it - header.begin()));
  }
  std::vector<SnotelStation> out;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = SplitTrimmedCells(lines[i]);
    const size_t line = i + 1;
    if (cells.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": ", cells.size(),
                                                     " cells, the header has ",
                                                     header.size()));
    }
    SnotelStation s;
    s.name = cells[col[0]];
    double* numbers[] = {&s.elevation_ft, &s.latitude, &s.longitude, &s.aspect_deg,
                         &s.slope_deg};
    for (int j = 0; j < 5; ++j) {
      if (!absl::SimpleAtod(cells[col[j + 1]], numbers[j]) || !std::isfinite(*numbers[j])) {
        return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ":", col[j + 1] + 1,
                                                       ": ", wanted[j + 1], " '",
                                                       cells[col[j + 1]],
                                                       "' is not a number"));
      }
    }
    if (!absl::SimpleAtoi(cells[col[6]], &s.land_cover)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ":", col[6] + 1,
                                                     ": LandCover '", cells[col[6]],
                                                     "' is not a class number"));
    }
    if (s.latitude < -90 || s.latitude > 90 || s.elevation_ft < -1500 ||
        s.elevation_ft > 30000) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":", line, ": station '", s.name, "' has latitude ", s.latitude,
          " and elevation ", s.elevation_ft, " ft, out of range"));
    }
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<SnotelStation>> LoadSnotelStations(const std::string& path,
                                                              const DataLimits& limits) {
  absl::StatusOr<std::string> text = ReadTextFile(path, limits);
  if (!text.ok()) return text.status();
  return ParseSnotelStations(*text, path);
}

TimeSeriesMatrix MakeSweSeries(const std::vector<SnotelStation>& stations,
                               const SweOptions& options) {
  TimeSeriesMatrix m;
  m.rows = options.days;
  m.columns = int64_t(stations.size());
  m.values.assign(m.rows * m.columns, 0.0f);
  for (const SnotelStation& s : stations) m.column_names.push_back(s.name);
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> weather(0.0, 3.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  // Regional weather shared by all stations (day to day), plus each
  // station's own.
  std::vector<double> regional(m.rows);
  for (double& w : regional) w = weather(rng);
  for (int64_t c = 0; c < m.columns; ++c) {
    const SnotelStation& s = stations[c];
    const double elevation_km = s.elevation_ft * 0.3048 / 1000;
    const double base_c = 15.0 - 5.5 * elevation_km - 0.7 * (s.latitude - 40.0);
    // Sun on the slope: south-facing (aspect 180) melts faster, north slower.
    const double sun = 1.0 + 0.4 * -std::cos(s.aspect_deg * kPi / 180) *
                                 std::sin(std::min(s.slope_deg, 60.0) * kPi / 180);
    // Forest (NLCD 41-43) shades the pack.
    const double shade = s.land_cover >= 41 && s.land_cover <= 43 ? 0.8 : 1.0;
    const double wet_mm = 4.0 + 3.0 * elevation_km;  // orographic
    double swe = 0;
    for (int64_t d = 0; d < m.rows; ++d) {
      // Day 0 is 1 October; the seasonal minimum falls in mid January.
      const double season = -12.0 * std::cos(2 * kPi * (double(d) - 106.0) / 365.0);
      const double t = base_c + season + regional[d] + 0.5 * weather(rng);
      if (uniform(rng) < 0.4) {
        const double p = wet_mm * (0.5 + uniform(rng));
        if (t < 1.0) swe += p;
      }
      if (t > 0) swe = std::max(0.0, swe - 4.0 * t * sun * shade);
      m.values[d * m.columns + c] = static_cast<float>(swe);
    }
  }
  return m;
}

}  // namespace hpt
