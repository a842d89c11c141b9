// Sliding-window samples over a TimeSeriesMatrix: a sample starting at row r
// has one token per station whose features are the `input_steps` values in
// rows [r, r + input_steps), and its target is each station's value at row
// r + input_steps - 1 + horizon. Values are z-scored per station with statistics
// fitted on the training rows only.
//
// Token groups: with `token_group` set, a sample is a window over a group
// of that many consecutive stations (columns), groups starting every
// `group_stride` stations, at every start row: the COVID-19 set's 3,142
// counties become many samples of 50 counties each. Sample ids then encode
// (start row, group); StationOf maps a sample's token back to its column.
//
//   ASSIGN_OR_RETURN(WindowDataset ds, WindowDataset::Create(m, options));
//   HostTensor x, y;
//   ds.Gather(ds.train_starts(), {0, 1, 2}, &x, &y);
#ifndef HPT_DATA_WINDOW_DATASET_H_
#define HPT_DATA_WINDOW_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "data/climatology.h"
#include "data/series.h"

namespace hpt {

struct WindowOptions {
  int64_t input_steps = 12;  // time steps of input per sample
  int64_t horizon = 1;
  RowRange train;          // rows a training sample may touch
  // More training ranges (a test range in the middle of the series, as the
  // paper's wind split has); normalisation is fitted on all of them.
  std::vector<RowRange> extra_train;
  RowRange test;           // empty range: no test split
  // Rows whose windows validate (model selection, early stopping); they
  // must not overlap any training or test range. Empty: none.
  RowRange validation;
  int64_t token_group = 0;   // stations per sample; 0: all of them
  int64_t group_stride = 1;  // stations between consecutive groups' first
};

class WindowDataset {
 public:
  static absl::StatusOr<WindowDataset> Create(TimeSeriesMatrix series,
                                              const WindowOptions& options);

  int64_t num_tokens() const { return group_size_; }
  int64_t num_groups() const { return groups_; }
  // The column of `token` in sample `sample` (an element of the starts).
  int64_t StationOf(int64_t sample, int64_t token) const {
    return (sample % groups_) * options_.group_stride + token;
  }
  int64_t input_features() const { return options_.input_steps; }
  int64_t output_features() const { return 1; }
  const std::vector<int64_t>& train_starts() const { return train_starts_; }
  const std::vector<int64_t>& test_starts() const { return test_starts_; }
  const std::vector<int64_t>& validation_starts() const { return validation_starts_; }

  // Fills inputs [n, tokens, input_steps] and targets [n, tokens, 1] with the
  // samples starts[indices[i]].
  void Gather(const std::vector<int64_t>& starts,
              const std::vector<int64_t>& indices, HostTensor* inputs,
              HostTensor* targets) const;

  const std::vector<float>& means() const { return mean_; }
  const std::vector<float>& stddevs() const { return std_; }
  // The series' column names (empty when the source had none).
  const std::vector<std::string>& station_names() const { return series_.column_names; }
  const std::string& unit() const { return series_.unit; }
  // Whether a sample's tokens are all the stations, in order.
  bool tokens_are_stations() const { return groups_ == 1; }
  const WindowOptions& options() const { return options_; }
  // The series as Gather reads it: each station z-scored.
  const TimeSeriesMatrix& normalized_series() const { return series_; }
  float mean(int64_t station) const { return mean_[station]; }
  float stddev(int64_t station) const { return std_[station]; }
  // A normalised value of `token` in sample `sample` (an element of the
  // starts), in the data's own units: the station's z-scoring undone.
  double ToDataUnits(int64_t sample, int64_t token, double value) const {
    const int64_t station = StationOf(sample, token);
    return value * double(std_[station]) + double(mean_[station]);
  }
  // The row of sample `sample`'s target.
  int64_t TargetRow(int64_t sample) const {
    return sample / groups_ + options_.input_steps - 1 + options_.horizon;
  }
  // The climatology forecast (data/climatology.h) of `token`'s target in
  // sample `sample`, in the data's own units.
  double ClimatologyOf(int64_t sample, int64_t token) const;
  // What that forecast is, in words ("station mean by hour of day").
  const std::string& climatology_basis() const { return climatology_.basis(); }
  // The rows' times (UTC seconds) where the source gave them, else empty.
  const std::vector<int64_t>& times() const { return series_.times; }
  // The time column's header where the source had one.
  const std::string& time_name() const { return series_.time_name; }

 private:
  WindowDataset() = default;

  TimeSeriesMatrix series_;  // normalised
  WindowOptions options_;
  std::vector<float> mean_, std_;
  Climatology climatology_;  // fitted on the training rows, z-scored
  int64_t group_size_ = 0, groups_ = 1;
  std::vector<int64_t> train_starts_, test_starts_, validation_starts_;
};

// Carves a validation range out of `options`' training rows: about
// `share` of them (at least one window's span), the last ones before the
// test range in time, taken from the end of the training range that ends
// nearest before it (the last training range where the test comes first
// or there is none), and never more than half of that range. The range
// it comes from shrinks, so no training window reaches a validation row.
// Returns the rows taken, in words ("of the training rows, 2160-2399
// validate (240 rows, 10 %, the last before the test) and train no
// window"), or empty where the range is too short to give
// a window to each side (then nothing changes).
std::string CarveValidation(double share, WindowOptions* options);

}  // namespace hpt

#endif  // HPT_DATA_WINDOW_DATASET_H_
