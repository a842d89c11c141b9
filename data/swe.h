// Snow-water equivalent over real SNOTEL stations. The stations (name,
// elevation, latitude, longitude, aspect, slope, land cover) are read from
// the SWE-Attention station table; their daily SWE series are not
// available, so the series are SYNTHETIC: a degree-day snowpack model whose
// accumulation and melt depend on each station's elevation, latitude,
// aspect and slope. Say so wherever the data is shown.
//
//   ASSIGN_OR_RETURN(std::vector<SnotelStation> s, LoadSnotelStations(path));
//   TimeSeriesMatrix swe = MakeSweSeries(s, {});  // days x stations, mm
#ifndef HPT_DATA_SWE_H_
#define HPT_DATA_SWE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/series.h"
#include "data/text_file.h"

namespace hpt {

struct SnotelStation {
  std::string name;
  double elevation_ft = 0, latitude = 0, longitude = 0;
  double aspect_deg = 0, slope_deg = 0;
  int land_cover = 0;  // NLCD class (42: evergreen forest)
};

// Parses the station table (`Snotel_Locations_Filtered_v3.csv` layout:
// header with "Station Name", "Elevation_x", "Latitude_x", "Longitude_x",
// "Aspect_tif_x", "Slope_tif1_x", "LandCover"). Errors name file:line:column.
absl::StatusOr<std::vector<SnotelStation>> ParseSnotelStations(const std::string& text,
                                                               const std::string& source);
absl::StatusOr<std::vector<SnotelStation>> LoadSnotelStations(
    const std::string& path, const DataLimits& limits = DataLimits());

struct SweOptions {
  int64_t days = 3 * 365;  // from 1 October (a water year's start)
  uint64_t seed = 7;
};

// Days x stations of snow-water equivalent in mm. Daily mean air
// temperature: 15 C at sea level and 40 N, -5.5 C per km up (a surface
// lapse rate of mountain slopes, Minder et al., JGR 115, 2010), -0.7 C per
// degree north, a seasonal swing of +-12 C (coldest mid January), and
// seeded day-to-day weather. Precipitation: seeded wet days (40 %), more
// with elevation (orographic). Snow falls below 1 C; melt is 4 mm per
// degree-day above 0 C (within the range Hock, J. Hydrol. 282, 2003,
// reports for snow), faster on sunny south-facing slopes and slower under
// forest. These are plausible shapes, not fitted to any station.
TimeSeriesMatrix MakeSweSeries(const std::vector<SnotelStation>& stations,
                               const SweOptions& options);

}  // namespace hpt

#endif  // HPT_DATA_SWE_H_
