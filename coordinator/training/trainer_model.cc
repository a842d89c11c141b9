// Trainer's quality and the model it keeps: predicting, each epoch's
// evaluation on the validation and test splits, best-validation selection,
// and the trained model collected from the workers with its data's units.
// The rest of Trainer is in trainer.cc.
#include "coordinator/training/trainer.h"

#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/training/model_export.h"
#include "data/timestamps.h"

namespace hpt {

absl::StatusOr<HostTensor> Trainer::Predict(const HostTensor& x) {
  if (hybrid_ == nullptr) return gpu_.Predict(x);
  HostTensor prediction;
  RETURN_IF_ERROR(
      hybrid_->Forward(x, nullptr, -1, false, ledger_.sink(), &prediction).status());
  return prediction;
}

Predictor Trainer::PredictShowingProgress(const std::string& split, int64_t samples) {
  return [this, split, samples, done = int64_t{0},
          shown = absl::InfinitePast()](const HostTensor& x) mutable -> absl::StatusOr<HostTensor> {
    // Where the job stands, at most once a second: a CPU may take minutes
    // over a large test split.
    const absl::Time now = options_.now();
    if (now - shown >= absl::Seconds(1)) {
      shown = now;
      state_.progress.set_evaluating(
          absl::StrCat("the ", split, ": ", done, " of ", samples, " samples"));
      state_.progress.set_elapsed_s(absl::ToDoubleSeconds(now - start_));
      if (options_.on_progress) options_.on_progress(state_);
    }
    absl::StatusOr<HostTensor> prediction = Predict(x);
    if (prediction.ok() && !x.shape.empty()) done += x.shape[0];
    return prediction;
  };
}

absl::StatusOr<bool> Trainer::Evaluate(int epoch) {
  ASSIGN_OR_RETURN(
      std::optional<double> validation,
      EvaluateValidationSplit(
          *data_, spec_.training(), model_,
          PredictShowingProgress("validation split", int64_t(data_->validation_starts().size()))));
  const Predictor predict =
      PredictShowingProgress("test split", TestSamples(*data_, spec_.training()));
  state_.progress.clear_evaluating();
  if (validation.has_value()) state_.progress.set_validation_loss(*validation);
  const bool selecting = validation.has_value() &&
                         spec_.training().select() == Selection::best_validation;
  // The epoch validates best so far: the one the job keeps, for now.
  const bool keep = selecting && (selected_.epoch == 0 || *validation < selected_.validation_loss);
  // A run that reads only its final quality scores the test split only
  // where it keeps the epoch.
  if (selecting && !keep && !options_.evaluate_every_epoch) return false;
  ASSIGN_OR_RETURN(std::optional<TestEvaluation> result,
                   EvaluateTestSplit(*data_, spec_.training(), model_, predict));
  state_.progress.clear_evaluating();
  state_.progress.set_elapsed_s(absl::ToDoubleSeconds(options_.now() - start_));
  TestPredictions predictions;
  if (result.has_value()) {
    state_.progress.set_test_loss(result->test_loss);
    state_.test_metrics = result->metrics;
    result->predictions.set_epoch(epoch);
    if (keep) predictions = result->predictions;
    state_.history->SetPredictions(std::move(result->predictions));
  }
  if (keep) RETURN_IF_ERROR(Keep(epoch, *validation, std::move(predictions)));
  return result.has_value();
}

absl::Status Trainer::Keep(int epoch, double validation_loss, TestPredictions predictions) {
  RETURN_IF_ERROR(CollectTrainedModel());
  selected_ = {epoch, validation_loss, state_.progress.test_loss(), state_.test_metrics,
               std::move(predictions), trained_};
  state_.progress.set_selected_epoch(epoch);
  state_.progress.set_selected_validation_loss(validation_loss);
  return absl::OkStatus();
}

bool Trainer::ApplySelection() {
  if (selected_.epoch == 0) return false;
  trained_ = selected_.model;
  state_.test_metrics = selected_.metrics;
  state_.progress.set_test_loss(selected_.test_loss);
  if (selected_.predictions.samples() > 0) state_.history->SetPredictions(selected_.predictions);
  return true;
}

DataUnits DataUnitsOf(const WindowDataset& data) {
  DataUnits u;
  for (const std::string& name : data.station_names()) u.add_stations(name);
  for (float m : data.means()) u.add_mean(m);
  for (float s : data.stddevs()) u.add_sd(s);
  u.set_input_steps(int32_t(data.options().input_steps));
  u.set_horizon(int32_t(data.options().horizon));
  u.set_per_token(data.tokens_are_stations());
  u.set_test_begin_row(data.options().test.begin);
  u.set_test_end_row(data.options().test.end);
  u.set_unit(data.unit());
  const std::vector<int64_t>& times = data.times();
  if (!times.empty()) {
    u.set_time_column(data.time_name());
    u.set_time_step_s(TypicalStep(times));
    u.set_first_time_s(times.front());
    const int64_t test = data.options().test.begin;
    if (test >= 0 && test < int64_t(times.size()) && data.options().test.end > test) {
      u.set_test_first_time_s(times[size_t(test)]);
    }
  }
  return u;
}

absl::Status Trainer::CollectTrainedModel() {
  std::map<std::string, HostTensor> params;
  if (hybrid_ != nullptr) {
    ASSIGN_OR_RETURN(params, hybrid_->Parameters());
  } else if (options_.head_worker != nullptr) {
    // The GPU's copy of the head is stale: the head worker's is trained.
    ASSIGN_OR_RETURN(std::vector<TensorChunk> encoder, workers_[0]->Snapshot(job_id_, {}));
    ASSIGN_OR_RETURN(params, AssembleChunks(encoder));
    ASSIGN_OR_RETURN(std::vector<TensorChunk> head,
                     options_.head_worker->Snapshot(job_id_, {}));
    ASSIGN_OR_RETURN(auto head_params, AssembleChunks(head));
    for (auto& [name, t] : head_params) params[name] = std::move(t);
  } else {
    ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, workers_[0]->Snapshot(job_id_, {}));
    ASSIGN_OR_RETURN(params, AssembleChunks(chunks));
  }
  ASSIGN_OR_RETURN(trained_.parameters,
                   MergeLoraTensors(std::move(params), spec_.hpt().lora().alpha()));
  trained_.config = model_;
  trained_.units = DataUnitsOf(*data_);
  return absl::OkStatus();
}

}  // namespace hpt
