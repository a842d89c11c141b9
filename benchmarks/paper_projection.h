// HpT against GPU-only training projected to the paper's length: the
// paper-size step costs come from a short run of the application's 12 x 512
// model at batch 1 (a forced early switch: it measures costs, not
// convergence), and a switch point measured on the small model is carried
// over in samples. Shared by paper_table and switch_frontier.
#ifndef HPT_BENCHMARKS_PAPER_PROJECTION_H_
#define HPT_BENCHMARKS_PAPER_PROJECTION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cost/record_costing.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

namespace hpt {

// The work record of `steps` batch-1 steps of `app`'s paper-size model on
// the real data in `dir`, through the GPU worker, the ReRAM chip and the
// systolic array, switching at the third check window.
absl::StatusOr<std::shared_ptr<const WorkRecord>> PaperSizeCostRecord(const std::string& app,
                                                                      const std::string& dir,
                                                                      int steps);

// The paper's training length for the small job `spec` (normalised): all
// its training samples for the paper's epochs at batch 1; and the job's
// batch and check window, to carry a switch step over.
struct PaperLength {
  int64_t train_samples = 0;
  double epochs = 0;
  int64_t batch = 1;
  double window_samples = 0;
};
absl::StatusOr<PaperLength> PaperLengthOf(const JobSpec& spec);

// The reference forecasts on `spec`'s test split, in the data's units:
// persistence (each station's last input value) and climatology, as a
// job's report scores them (persistence_rmse, climatology_rmse,
// climatology; the model's own figures in it are a zero forecast's).
absl::StatusOr<QualityMetrics> ReferenceForecasts(const JobSpec& spec);

// GPU-only over HpT, time (energy: false) or energy, under the costing `c`
// of the record: the switch after `switch_step` steps of the small job's
// batch (-1: never, ratio 1), `trial_windows` trial windows beside the
// full model (each a window of samples at the full step's cost), the
// switch's programming, then LoRA steps.
double ProjectedRatio(const JobCosts& c, const PaperLength& length, bool energy,
                      int64_t switch_step, int trial_windows);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_PAPER_PROJECTION_H_
