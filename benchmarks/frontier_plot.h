// The switch frontier of one application as a standalone SVG: test RMSE
// over the full-parameter run's (top) and HpT's projected time saving
// (bottom) against the step the switch was forced at, one thin line per
// training seed, each seed's knee ringed and a rule's own switch marked.
#ifndef HPT_BENCHMARKS_FRONTIER_PLOT_H_
#define HPT_BENCHMARKS_FRONTIER_PLOT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hpt {

struct FrontierPoint {
  int64_t step = 0;          // the first LoRA-phase step
  double rmse_ratio = 1;     // RMSE / the full-parameter run's
  // GPU-only time / HpT's, projected: against the paper's baseline and
  // against the fastest GPU-only one.
  double time_paper = 1, time_fastest = 1;
};

struct FrontierSeries {
  uint64_t seed = 0;
  std::vector<FrontierPoint> points;  // by step; the last: never switched
  int64_t knee = -1;
  int64_t rule_step = -1;  // the marked rule's switch (-1: none)
};

// `total_steps`: the run's length (its never-switch point); `fastest`: the
// fastest GPU-only baseline's name; `rule`: the marked rule's name.
std::string FrontierSvg(const std::string& app, const std::vector<FrontierSeries>& seeds,
                        int64_t total_steps, const std::string& fastest,
                        const std::string& rule);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_FRONTIER_PLOT_H_
