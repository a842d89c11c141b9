#include "benchmarks/paper_projection.h"

#include <algorithm>

#include "benchmarks/bench_jobs.h"
#include "common/status_macros.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/spec/paper_recipes.h"
#include "coordinator/training/evaluation.h"
#include "coordinator/training/job_data.h"

namespace hpt {

absl::StatusOr<std::shared_ptr<const WorkRecord>> PaperSizeCostRecord(const std::string& app,
                                                                      const std::string& dir,
                                                                      int steps) {
  JobSpec paper;
  paper.mutable_model()->set_preset(app);
  paper.mutable_training()->set_epochs(1);
  paper.mutable_training()->set_batch_size(1);
  paper.mutable_training()->set_max_steps_per_epoch(steps);
  paper.mutable_training()->set_max_test_samples(1);
  ForceEarlySwitch(paper.mutable_hpt());
  RETURN_IF_ERROR(SetRealData(app, dir, &paper));
  std::shared_ptr<const WorkRecord> record;
  ASSIGN_OR_RETURN(BenchRun cost, RunInProcess(paper, TrainingMode::hpt, app + " paper-size costs",
                                               0, [&](const TrainerUpdate& u) {
                                                 if (u.work_record != nullptr) {
                                                   record = u.work_record;
                                                 }
                                               }));
  if (cost.job.hpt().switch_step() < 0 || record == nullptr) {
    return absl::FailedPreconditionError("the paper-size cost run did not reach the LoRA phase");
  }
  return record;
}

absl::StatusOr<QualityMetrics> ReferenceForecasts(const JobSpec& spec) {
  ASSIGN_OR_RETURN(JobSpec normal, NormalizeJobSpec(spec));
  ASSIGN_OR_RETURN(WindowDataset data, BuildJobData(normal.data()));
  ModelConfig model;
  model.set_d_model(1);
  model.set_num_layers(1);
  const int64_t outputs = data.output_features();
  auto zero = [outputs](const HostTensor& x) -> absl::StatusOr<HostTensor> {
    return HostTensor({x.shape.at(0), x.shape.at(1), outputs});
  };
  ASSIGN_OR_RETURN(std::optional<TestEvaluation> e,
                   EvaluateTestSplit(data, normal.training(), model, zero));
  if (!e.has_value()) return absl::FailedPreconditionError("the data has no test split");
  return e->metrics;
}

absl::StatusOr<PaperLength> PaperLengthOf(const JobSpec& spec) {
  ASSIGN_OR_RETURN(JobSpec normal, NormalizeJobSpec(spec));
  ASSIGN_OR_RETURN(WindowDataset data, BuildJobData(normal.data()));
  PaperLength length;
  length.train_samples = int64_t(data.train_starts().size());
  length.epochs = PaperEpochs(normal.model().preset());
  length.batch = normal.training().batch_size();
  length.window_samples = double(normal.hpt().check_window_samples());
  return length;
}

double ProjectedRatio(const JobCosts& c, const PaperLength& length, bool energy,
                      int64_t switch_step, int trial_windows) {
  const CostComparison& cmp = c.comparison;
  double switch_s = 0, switch_j = 0;
  for (const PhaseCost& p : c.phases) {
    if (p.phase() == CostPhase::switch_) {
      switch_s = p.simulated_s();
      switch_j = p.energy_j();
    }
  }
  const double n = length.epochs * double(length.train_samples);
  const double full = energy ? cmp.full_step_j() : cmp.full_step_s();
  const double lora = energy ? cmp.lora_step_j() : cmp.lora_step_s();
  if (switch_step < 0 || lora <= 0) return 1.0;
  const double before = std::min(n, double(switch_step) * double(length.batch));
  const double hpt = before * full + trial_windows * length.window_samples * full +
                     (energy ? switch_j : switch_s) + (n - before) * lora;
  return n * full / hpt;
}

}  // namespace hpt
