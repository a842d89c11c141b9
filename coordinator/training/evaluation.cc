#include "coordinator/training/evaluation.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "data/quality_metrics.h"

namespace hpt {

int64_t EvalBatchSize(const TrainingSpec& training, const ModelConfig& model, int64_t tokens) {
  if (training.eval_batch_size() > 0) return training.eval_batch_size();
  // No gradients are kept, so one request may carry many samples. Bigger is
  // not faster past a point: each op of a simulated device streams its whole
  // input and output, and once a request's widest activation (token rows x
  // the feed-forward width) outgrows the CPU's caches, every element-wise
  // pass and copy goes to DRAM. On the wind preset (d_model 512, 57 tokens)
  // the test split took 26-28 s at 287 samples a request, 21-22 s at 9-72
  // and 20.4-20.8 s at 36 (//benchmarks:device_step_bench --eval_batch).
  // So: the widest activation near 16 MiB (at most 16 Ki token rows), and
  // the attention weights (samples x heads x tokens^2) within 32 Mi.
  const int64_t t = std::max<int64_t>(1, tokens);
  const int64_t ff_width = int64_t(std::max(1, model.d_model())) *
                           (model.ff_multiplier() > 0 ? model.ff_multiplier() : 4);
  const int64_t rows = std::min<int64_t>(int64_t{16} << 10, (int64_t{4} << 20) / ff_width);
  const int64_t by_rows = rows / t;
  const int64_t by_attention = (int64_t{32} << 20) / (std::max(1, model.num_heads()) * t * t);
  return std::max<int64_t>({int64_t{1}, training.batch_size(), std::min(by_rows, by_attention)});
}

namespace {

// One call of `on_value(index into starts, element e, x, y, prediction)`
// per target value of `starts`' samples, predicted `batch` samples a
// request. INTERNAL where a prediction's shape is not the targets'.
template <typename OnValue>
absl::Status ForEachPrediction(const WindowDataset& data, const std::vector<int64_t>& starts,
                               int64_t batch, const Predictor& predict, OnValue&& on_value) {
  const int64_t tokens = data.num_tokens();
  for (int64_t begin = 0; begin < static_cast<int64_t>(starts.size()); begin += batch) {
    std::vector<int64_t> indices;
    for (int64_t i = begin; i < std::min<int64_t>(begin + batch, starts.size()); ++i) {
      indices.push_back(i);
    }
    HostTensor x, y;
    data.Gather(starts, indices, &x, &y);
    absl::StatusOr<HostTensor> prediction = predict(x);
    if (!prediction.ok()) return prediction.status();
    if (prediction->data.size() != y.data.size()) {
      return absl::InternalError(absl::StrCat("prediction has shape ",
                                              prediction->ShapeString(), ", targets ",
                                              y.ShapeString()));
    }
    // Targets are [n, tokens, 1].
    for (size_t e = 0; e < y.data.size(); ++e) {
      on_value(indices[int64_t(e) / tokens], e, x, y, *prediction);
    }
  }
  return absl::OkStatus();
}

}  // namespace

int64_t TestSamples(const WindowDataset& data, const TrainingSpec& training) {
  const int64_t all = int64_t(data.test_starts().size());
  return training.max_test_samples() > 0 ? std::min<int64_t>(all, training.max_test_samples())
                                         : all;
}

absl::StatusOr<std::optional<TestEvaluation>> EvaluateTestSplit(const WindowDataset& data,
                                                                const TrainingSpec& training,
                                                                const ModelConfig& model,
                                                                const Predictor& predict) {
  std::vector<int64_t> starts = data.test_starts();
  starts.resize(TestSamples(data, training));
  if (starts.empty()) return std::nullopt;
  const int64_t batch = EvalBatchSize(training, model, data.num_tokens());
  const int64_t tokens = data.num_tokens();
  double sum_sq = 0;
  int64_t count = 0;
  QualityAccumulator quality;
  // The references on the same values: persistence (each station's last
  // input value) and climatology.
  double persistence_sq = 0, climatology_sq = 0;
  const int64_t steps = data.input_features();
  const int64_t shown_tokens = std::min<int64_t>(kPredictionTokens, tokens);
  const int64_t shown_samples = std::min<int64_t>(kPredictionSamples, int64_t(starts.size()));
  TestPredictions shown;
  for (int t = 0; t < shown_tokens; ++t) shown.add_tokens(t);
  shown.set_samples(shown_samples);
  shown.mutable_truth()->Resize(int(shown_tokens * shown_samples), 0.f);
  shown.mutable_predicted()->Resize(int(shown_tokens * shown_samples), 0.f);
  if (!data.times().empty()) {
    for (int64_t i = 0; i < shown_samples; ++i) {
      shown.add_times(data.times()[data.TargetRow(starts[i])]);
    }
  }
  absl::Status done = ForEachPrediction(data, starts, batch, predict, [&](int64_t index, size_t e,
                                                                          const HostTensor& x,
                                                                          const HostTensor& y,
                                                                          const HostTensor& p) {
    const double d = double(p.data[e]) - y.data[e];
    sum_sq += d * d;
    ++count;
    const int64_t sample = starts[index];
    const int64_t token = int64_t(e) % tokens;
    const double predicted = data.ToDataUnits(sample, token, p.data[e]);
    const double truth = data.ToDataUnits(sample, token, y.data[e]);
    quality.Add(predicted, truth, data.StationOf(sample, token));
    const double persisted = data.ToDataUnits(sample, token, x.data[e * steps + steps - 1]);
    persistence_sq += (persisted - truth) * (persisted - truth);
    const double usual = data.ClimatologyOf(sample, token);
    climatology_sq += (usual - truth) * (usual - truth);
    if (token < shown_tokens && index < shown_samples) {
      shown.set_predicted(int(token * shown_samples + index), float(predicted));
      shown.set_truth(int(token * shown_samples + index), float(truth));
    }
  });
  if (!done.ok()) return done;
  QualityMetrics metrics = quality.Finish();
  metrics.set_persistence_rmse(std::sqrt(persistence_sq / double(count)));
  metrics.set_climatology_rmse(std::sqrt(climatology_sq / double(count)));
  metrics.set_skill(ForecastSkill(metrics.rmse(), metrics.persistence_rmse()));
  metrics.set_climatology(data.climatology_basis());
  return TestEvaluation{sum_sq / double(count), std::move(metrics), std::move(shown)};
}

absl::StatusOr<std::optional<double>> EvaluateValidationSplit(const WindowDataset& data,
                                                             const TrainingSpec& training,
                                                             const ModelConfig& model,
                                                             const Predictor& predict) {
  const std::vector<int64_t>& starts = data.validation_starts();
  if (starts.empty()) return std::nullopt;
  const int64_t batch = EvalBatchSize(training, model, data.num_tokens());
  double sum_sq = 0;
  int64_t count = 0;
  absl::Status done = ForEachPrediction(
      data, starts, batch, predict,
      [&](int64_t, size_t e, const HostTensor&, const HostTensor& y, const HostTensor& p) {
        const double d = double(p.data[e]) - y.data[e];
        sum_sq += d * d;
        ++count;
      });
  if (!done.ok()) return done;
  return sum_sq / double(count);
}

}  // namespace hpt
