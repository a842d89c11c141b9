// Evaluation on a job's test split: predictions in request-sized batches,
// the test loss in normalised units (what training minimises) and the
// quality metrics in the data's own units (data/quality_metrics.h).
//
//   ASSIGN_OR_RETURN(std::optional<TestEvaluation> result,
//                    EvaluateTestSplit(data, spec.training(), model, predict));
#ifndef HPT_COORDINATOR_TRAINING_EVALUATION_H_
#define HPT_COORDINATOR_TRAINING_EVALUATION_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "common/host_tensor.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

// Samples per evaluation request: training.eval_batch_size, or when 0 as
// many as keep a request's widest activation near 16 MiB (at most 16 Ki
// token rows) and its attention weights within 32 Mi
// (never fewer than batch_size).
int64_t EvalBatchSize(const TrainingSpec& training, const ModelConfig& model, int64_t tokens);

struct TestEvaluation {
  double test_loss = 0;  // MSE over every target value, normalised units
  QualityMetrics metrics;
  // The first kPredictionTokens tokens over the first kPredictionSamples
  // test samples, in the data's units (epoch left 0 for the caller).
  TestPredictions predictions;
};

inline constexpr int kPredictionTokens = 4;
inline constexpr int kPredictionSamples = 240;

// The model's output for inputs [n, tokens, features].
using Predictor = std::function<absl::StatusOr<HostTensor>(const HostTensor& inputs)>;

// The test samples an evaluation predicts: the test split's, at most
// training.max_test_samples when that is set.
int64_t TestSamples(const WindowDataset& data, const TrainingSpec& training);

// Evaluates on the test split (its first TestSamples samples); nullopt when
// the split is empty. INTERNAL when a
// prediction's shape is not the targets'.
absl::StatusOr<std::optional<TestEvaluation>> EvaluateTestSplit(const WindowDataset& data,
                                                                const TrainingSpec& training,
                                                                const ModelConfig& model,
                                                                const Predictor& predict);

// The MSE (normalised units) of the model on the validation split's
// samples; nullopt where the data has no validation split.
absl::StatusOr<std::optional<double>> EvaluateValidationSplit(const WindowDataset& data,
                                                             const TrainingSpec& training,
                                                             const ModelConfig& model,
                                                             const Predictor& predict);

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_EVALUATION_H_
