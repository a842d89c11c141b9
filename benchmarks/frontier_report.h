// switch_frontier's output: each seed's frontier, the rules measured
// against the knee, the default the stated criterion picks, and the files
// (frontier.tsv, frontier-<app>.svg, index.html).
#ifndef HPT_BENCHMARKS_FRONTIER_REPORT_H_
#define HPT_BENCHMARKS_FRONTIER_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

#include "benchmarks/frontier_runs.h"

namespace hpt {

// The knee of a seed's frontier: the earliest grid step (or the
// never-switched end) whose RMSE is within `tolerance` of the best of them.
// The grid alone decides, so the knee does not move with the rules
// measured.
int64_t KneeOf(const SeedRun& s, double tolerance);

// One rule on one application, over its seeds.
struct RuleSummary {
  std::string rule;
  int seeds = 0, switched = 0;
  // |switch - knee| over the run's length; a seed that never switched
  // counts from the run's end.
  double median_distance = 0, worst_distance = 0;
  double median_signed_steps = 0;  // switch - knee, steps (negative: early)
  double mean_rmse_ratio = 0, worst_rmse_ratio = 0;  // RMSE / full-parameter
  // Median over the seeds that switched after the knee: HpT's extra time
  // over the knee's; before it: RMSE over the knee's, minus 1.
  double median_time_lost = 0, median_quality_lost = 0;
  double mean_time_paper = 0, mean_time_fastest = 0;  // projected ratios
};
RuleSummary SummarizeRule(const App& app, size_t rule_index);

// The criterion of docs/method.md "Choosing the default": on every
// application the rule switches in at least 80 % of the seeds, its RMSE
// within 5 % of full-parameter's in every seed and its median distance to
// the knee at most 25 % of the run. Of the rules that qualify, the least
// worst-application median distance wins; within 2.5 % of the run, the
// larger mean time saving against the fastest baseline. `why` says what
// each rule missed. Empty when none qualifies.
std::string ChooseDefault(const std::vector<App>& apps, const std::vector<std::string>& rules,
                          std::string* why);

// The printed report (with PrintSkill's table).
void PrintFrontier(const std::vector<App>& apps, const std::vector<std::string>& rules);
// Persistence's and climatology's RMSE per application beside the
// full-parameter baseline's and each rule's, with their skill.
void PrintSkill(const std::vector<App>& apps, const std::vector<std::string>& rules);

// Rule `rule_index` in paper_table's terms: its switch over the seeds, its
// RMSE against full-parameter training's (LoRA on the GPU worker) with a
// paired test of "worse", and time and energy against every GPU baseline
// projected to the paper's epochs at its model size and batch 1.
void PrintRuleAtPaperLength(const std::vector<App>& apps, size_t rule_index);

// frontier.tsv, frontier-<app>.svg (marking `plot_rule`) and index.html
// under `dir`.
void WriteFrontierFiles(const std::vector<App>& apps, const std::vector<std::string>& rules,
                        const std::string& plot_rule, const std::string& dir);

// The plots again from a frontier.tsv this benchmark wrote (its seeds'
// points, the knee from the grid rows, `plot_rule`'s switch from its
// "rule:" rows, the fastest baseline the one HpT saves least against):
// frontier-<app>.svg and index.html beside it.
absl::Status ReplotFrontier(const std::string& dir, const std::string& plot_rule,
                            double knee_tolerance);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_FRONTIER_REPORT_H_
