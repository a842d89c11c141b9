// What switch_frontier measures, per application and training seed, and
// the projections of a switch step to the paper's length (the rules'
// table and the plots read these: frontier_report.h).
#ifndef HPT_BENCHMARKS_FRONTIER_RUNS_H_
#define HPT_BENCHMARKS_FRONTIER_RUNS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/paper_projection.h"
#include "cost/record_costing.h"
#include "proto/job_service.pb.h"

namespace hpt {

// A rule replayed on one seed's full run.
// A rule on one seed: replayed on the seed's full run, or (layerwise,
// whose layers switch one by one, so no whole-model checkpoint holds its
// path) run as a job of its own.
struct RuleRun {
  std::string rule;
  int64_t step = -1;  // its switch (the first LoRA step); -1: never
  int trials = 0;     // trial windows it ran (each a t-test)
  double rmse = 0;
  // The least margin of its checks (statistic over bound, < 1 passes),
  // per test; 0 for a test the rule does not read, -1 with no check.
  double closest_loss = -1, closest_weight = -1;
  // layerwise: each encoder layer's switch step (-1: never); `step` is the
  // last layer's, when the whole model is in the LoRA phase.
  std::vector<int64_t> layer_steps;
};

// Whether `rule` (a --rules name) runs as a job of its own.
inline bool RunsAlone(const std::string& rule) { return rule == "layerwise"; }

struct SeedRun {
  uint64_t seed = 0;
  int64_t total_steps = 0, window = 0;
  double rmse_full = 0;
  std::map<int64_t, double> rmse_at;  // switch step -> test RMSE (total_steps: never)
  std::vector<int64_t> grid;
  int64_t knee = -1;
  std::vector<RuleRun> rules;  // in --rules' order
  int64_t devices_step = -1;   // the point also run on the devices (-1: none)
  double devices_rmse = 0;
  double wall_s = 0;
  std::string error;
};

struct App {
  std::string name;
  JobSpec spec;  // the small model's, LoRA on the GPU worker
  // The frontier's projection: these runs' epochs at the paper's size and
  // batch 1. `paper_length`: the paper's epochs (paper_table's).
  PaperLength length, paper_length;
  std::vector<JobCosts> costs;  // per GPU baseline, AllGpuBaselines' order
  size_t fastest = 0;           // the baseline with the shortest GPU-only step
  // Persistence's and climatology's test RMSE (ReferenceForecasts).
  QualityMetrics reference;
  std::vector<SeedRun> seeds;
  std::string error;
};

// A seed's run as text, one "key values" line each, and back: how a child
// process hands its seed to switch_frontier.
std::string FormatSeedRun(const SeedRun& s);
absl::Status ParseSeedRun(const std::string& text, SeedRun* s);

// GPU-only over HpT per GPU baseline, for a switch at `step` of a run of
// `total_steps` (-1 or the run's end: never) after `trials` trial windows.
struct Projection {
  std::vector<double> time, energy;
};
Projection Project(const App& app, int64_t step, int trials, int64_t total_steps);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_FRONTIER_RUNS_H_
