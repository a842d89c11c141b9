// TimeSeriesMatrix: values of S stations over T time steps, row-major
// (row = time step). The common form of every data source before windowing.
#ifndef HPT_DATA_SERIES_H_
#define HPT_DATA_SERIES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hpt {

// Rows [begin, end) of a series.
struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
};

struct TimeSeriesMatrix {
  int64_t rows = 0;     // time steps
  int64_t columns = 0;  // stations
  std::vector<float> values;  // rows * columns
  std::vector<std::string> column_names;  // empty when the source had none
  std::string unit;  // the values' unit where the source names it
  // Each row's time, UTC seconds since 1970-01-01, increasing, where the
  // source gives one (a CSV's time column, the weather files' hours);
  // empty where it gives none. `time_name`: the time column's header.
  std::vector<int64_t> times;
  std::string time_name;

  float at(int64_t row, int64_t column) const {
    return values[row * columns + column];
  }
};

}  // namespace hpt

#endif  // HPT_DATA_SERIES_H_
