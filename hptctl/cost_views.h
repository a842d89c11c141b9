// What hptctl makes of a job's work record (proto/work.proto) without the
// coordinator: sweeps of settings re-costed locally (cost/record_costing.h,
// the coordinator's own path), the search for a target ratio, a plot
// (sweep_svg.cc), a step's timeline as Chrome trace-event JSON, and whatif's
// ratios beside the job's own. Pure functions, tested on their own
// (cost_views_test.cc).
#ifndef HPT_HPTCTL_COST_VIEWS_H_
#define HPT_HPTCTL_COST_VIEWS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/record_costing.h"
#include "proto/work.pb.h"

namespace hpt {

// --grid KEY=V1,V2,...
struct SweepGrid {
  std::string key;
  std::vector<std::string> values;
  // What each value is costed as, where that is not the value as shown (a
  // reference_gpu profile file's text, the file's path shown); empty: the
  // values themselves.
  std::vector<std::string> costed;
};
absl::StatusOr<SweepGrid> ParseGrid(const std::string& text);

struct SweepPoint {
  CostSettings settings;  // the grid's, one value per key
  double time_ratio = 0, energy_ratio = 0;                      // as run
  double projected_time_ratio = 0, projected_energy_ratio = 0;  // the report's projection
  double hpt_s = 0, hpt_j = 0, gpu_only_s = 0, gpu_only_j = 0;
  double lora_step_s = 0;
  std::string bound_by;  // the device kind busiest in a LoRA-phase step ("" if none ran)
};

// Every combination of the grids (the first grid's key outermost), each
// re-costed with `fixed` settings first.
absl::StatusOr<std::vector<SweepPoint>> Sweep(const WorkRecord& record,
                                              const std::vector<SweepGrid>& grids,
                                              const CostSettings& fixed);

// The ratios a sweep's notes compare: as run and projected time (the
// table), or projected time and energy (the SVG's lines).
enum class SweepRatios { kTime, kProjected };
// Whether no value of grid `g` moves `ratios` by more than 0.1 % wherever
// the other grids' values are the same: the table says so, and the SVG
// that its lines coincide.
bool UnmovedBy(size_t g, const std::vector<SweepPoint>& points, SweepRatios ratios);

std::string SweepTable(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points);
std::string SweepCsv(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points);
std::string SweepJson(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points);
// The projected time and energy ratios against the first grid's values,
// one line per combination of the other grids' values, as SVG.
std::string SweepSvg(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points,
                     const std::string& title);

// --target time=11.9 (or energy=R): the value of `grid.key` (a numeric
// setting) in [min, max] of its grid values at which the projected ratio
// reaches the target.
struct TargetResult {
  bool reached = false;
  double value = 0;     // the key's value where it is reached
  double ratio = 0;     // the ratio there (or the best in range)
  double best_at = 0;   // where the best in range is
  std::string message;  // the answer in words, with what bounds the step
};
absl::StatusOr<std::pair<std::string, double>> ParseTarget(const std::string& text);
absl::StatusOr<TargetResult> FindTarget(const WorkRecord& record, const SweepGrid& grid,
                                        const std::string& metric, double target,
                                        const CostSettings& fixed);
// The same for a ratio of the caller's (`what` names it in the message).
using RatioOf = std::function<double(const JobCosts&)>;
absl::StatusOr<TargetResult> FindTarget(const WorkRecord& record, const SweepGrid& grid,
                                        const RatioOf& ratio, const std::string& what,
                                        double target, const CostSettings& fixed);

// whatif's first lines: HpT's ratios against GPU-only as the job ran and
// under the settings asked for, side by side ("" when `as_run` has none).
// `gpu_changed`: the settings changed the GPU (reference_gpu,
// gpu_precision); where the time then did not move on a mostly
// launch-bound GPU side, a line says why.
std::string WhatIfChange(const Job& as_run, const Job& what_if, bool gpu_changed);

// A step's simulated timeline as Chrome trace-event JSON (Perfetto and
// chrome://tracing open it): one track per device, one complete ("X")
// slice per task with its work and cost in args; times in microseconds.
std::string ChromeTrace(const std::string& job_id, const StepTimeline& timeline);

}  // namespace hpt

#endif  // HPT_HPTCTL_COST_VIEWS_H_
