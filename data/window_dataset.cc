#include "data/window_dataset.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace hpt {
namespace {

std::vector<int64_t> StartsWithin(const RowRange& range, int64_t span) {
  std::vector<int64_t> starts;
  for (int64_t r = range.begin; r + span <= range.end; ++r) starts.push_back(r);
  return starts;
}

}  // namespace

absl::StatusOr<WindowDataset> WindowDataset::Create(
    TimeSeriesMatrix series, const WindowOptions& options) {
  if (options.input_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.input_steps must be at least 1, got ", options.input_steps));
  }
  if (options.horizon < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.horizon must be at least 1, got ", options.horizon));
  }
  auto check_range = [&](const RowRange& r, const char* name) -> absl::Status {
    if (r.begin < 0 || r.end < r.begin || r.end > series.rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data ", name, " rows [", r.begin, ", ", r.end,
          ") do not lie within the ", series.rows, " data rows"));
    }
    return absl::OkStatus();
  };
  std::vector<RowRange> train = {options.train};
  train.insert(train.end(), options.extra_train.begin(), options.extra_train.end());
  for (const RowRange& r : train) {
    if (absl::Status s = check_range(r, "train"); !s.ok()) return s;
  }
  if (absl::Status s = check_range(options.test, "test"); !s.ok()) return s;
  if (absl::Status s = check_range(options.validation, "validation"); !s.ok()) return s;
  for (const RowRange& r : train) {
    const RowRange& v = options.validation;
    if (v.end > v.begin && r.begin < v.end && v.begin < r.end) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data validation rows [", v.begin, ", ", v.end, ") overlap training rows [", r.begin,
          ", ", r.end, ")"));
    }
  }

  WindowDataset ds;
  ds.options_ = options;
  ds.group_size_ = series.columns;
  if (options.token_group > 0) {
    if (options.group_stride < 1 || options.token_group > series.columns) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data: groups of ", options.token_group, " stations every ", options.group_stride,
          " need a positive stride and at most the ", series.columns, " stations"));
    }
    ds.group_size_ = options.token_group;
    ds.groups_ = (series.columns - options.token_group) / options.group_stride + 1;
  } else {
    ds.options_.group_stride = 1;
  }
  const int64_t span = options.input_steps + options.horizon;
  auto add = [&](int64_t start, std::vector<int64_t>* out) {
    for (int64_t g = 0; g < ds.groups_; ++g) out->push_back(start * ds.groups_ + g);
  };
  for (const RowRange& r : train) {
    for (int64_t start : StartsWithin(r, span)) add(start, &ds.train_starts_);
  }
  for (int64_t start : StartsWithin(options.test, span)) add(start, &ds.test_starts_);
  for (int64_t start : StartsWithin(options.validation, span)) {
    add(start, &ds.validation_starts_);
  }
  // A window lies wholly in its range: input_steps rows, then the target
  // `horizon` rows after the last.
  if (ds.train_starts_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data: the training rows (first range [", options.train.begin, ", ", options.train.end,
        ")) hold no window of ", options.input_steps, " steps plus a horizon of ", options.horizon,
        ": a range needs at least ", span,
        " rows; widen it (a longer series), or lower data.input_steps or data.horizon"));
  }
  if (options.test.end > options.test.begin && ds.test_starts_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data: the test rows [", options.test.begin, ", ", options.test.end, ") hold no window of ",
        options.input_steps, " steps plus a horizon of ", options.horizon,
        ": a range needs at least ", span, " rows. To forecast rows ", options.test.begin,
        " on, begin it at ", std::max<int64_t>(0, options.test.begin - span + 1),
        " (a window's inputs may be training rows, its target never is)"));
  }
  // Per-station z-score fitted on the training rows only.
  const int64_t columns = series.columns;
  ds.mean_.assign(columns, 0.0f);
  ds.std_.assign(columns, 1.0f);
  for (int64_t c = 0; c < columns; ++c) {
    double sum = 0, sum_sq = 0;
    int64_t n = 0;
    for (const RowRange& range : train) {
      for (int64_t r = range.begin; r < range.end; ++r) {
        const double v = series.at(r, c);
        sum += v;
        sum_sq += v * v;
        ++n;
      }
    }
    const double mean = sum / n;
    const double var = std::max(0.0, sum_sq / n - mean * mean);
    ds.mean_[c] = static_cast<float>(mean);
    ds.std_[c] = var > 1e-12 ? static_cast<float>(std::sqrt(var)) : 1.0f;
  }
  for (int64_t r = 0; r < series.rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) {
      float& v = series.values[r * columns + c];
      v = (v - ds.mean_[c]) / ds.std_[c];
    }
  }
  ds.climatology_ = Climatology::Fit(series, train);
  ds.series_ = std::move(series);
  return ds;
}

double WindowDataset::ClimatologyOf(int64_t sample, int64_t token) const {
  const int64_t time = series_.times.empty() ? 0 : series_.times[TargetRow(sample)];
  return ToDataUnits(sample, token, climatology_.At(StationOf(sample, token), time));
}

void WindowDataset::Gather(const std::vector<int64_t>& starts,
                           const std::vector<int64_t>& indices,
                           HostTensor* inputs, HostTensor* targets) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t tokens = group_size_;
  const int64_t steps = options_.input_steps;
  *inputs = HostTensor({n, tokens, steps});
  *targets = HostTensor({n, tokens, 1});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t sample = starts[indices[i]];
    const int64_t start = sample / groups_;
    for (int64_t s = 0; s < tokens; ++s) {
      const int64_t column = StationOf(sample, s);
      float* row = &inputs->data[(i * tokens + s) * steps];
      for (int64_t w = 0; w < steps; ++w) row[w] = series_.at(start + w, column);
      targets->data[i * tokens + s] =
          series_.at(start + steps - 1 + options_.horizon, column);
    }
  }
}

std::string CarveValidation(double share, WindowOptions* options) {
  if (!(share > 0)) return "";
  std::vector<RowRange*> train = {&options->train};
  for (RowRange& r : options->extra_train) train.push_back(&r);
  int64_t rows = 0;
  for (const RowRange* r : train) rows += std::max<int64_t>(0, r->end - r->begin);
  // The training range that ends nearest before the test's first target
  // row (test windows' inputs may reach back into training rows); else
  // the last.
  const int64_t span = options->input_steps + options->horizon;
  const bool has_test = options->test.end > options->test.begin;
  const int64_t first_target = options->test.begin + span - 1;
  // The non-empty range that ends last at or before `bound`.
  auto last_ending = [&train](int64_t bound) -> RowRange* {
    RowRange* last = nullptr;
    for (RowRange* r : train) {
      if (r->end > r->begin && r->end <= bound && (last == nullptr || r->end > last->end)) {
        last = r;
      }
    }
    return last;
  };
  RowRange* from = has_test ? last_ending(first_target) : nullptr;
  const bool before_test = from != nullptr;
  if (from == nullptr) from = last_ending(INT64_MAX);
  if (from == nullptr) return "";
  const int64_t length = from->end - from->begin;
  int64_t take = std::max<int64_t>(span, int64_t(std::llround(share * double(rows))));
  take = std::min(take, length / 2);
  if (take < span || length - take < span) return "";
  options->validation = {from->end - take, from->end};
  from->end -= take;
  return absl::StrCat("of the training rows, ", options->validation.begin, "-",
                      options->validation.end - 1, " validate (", take, " rows, ",
                      int(std::llround(100.0 * double(take) / double(rows))), " %, ",
                      before_test ? "the last before the test" : "the last of them",
                      ") and train no window");
}

}  // namespace hpt
