// Summaries of a benchmark repeated over training seeds: the switch step
// (median, range, how many seeds never switched), a ratio's mean and
// sample standard deviation or range, and a paired one-sided t-test of
// whether HpT's RMSE is worse than full-parameter training's.
#ifndef HPT_BENCHMARKS_SEED_STATS_H_
#define HPT_BENCHMARKS_SEED_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hpt {

struct SwitchStats {
  int seeds = 0;
  int not_switched = 0;
  double median = -1;  // over the seeds that switched; -1 if none did
  int64_t min = -1, max = -1;
};
// `steps` per seed; negative: that seed did not switch.
SwitchStats SummarizeSwitches(const std::vector<int64_t>& steps);
// "median 795, range 600-1200, 1 of 5 no switch"
std::string FormatSwitches(const SwitchStats& s);

struct Spread {
  int n = 0;
  double mean = 0, sd = 0;  // sd: sample (n - 1); 0 for n < 2
  double min = 0, max = 0;
};
Spread Summarize(const std::vector<double>& values);

// Paired t-test of H1 "a is larger than b" (HpT's RMSE worse than full's):
// t on the differences a_i - b_i with n - 1 degrees of freedom, and the
// one-sided p. n < 2, or differences all equal: p 1 when they are <= 0,
// else 0 (t infinite).
struct PairedTest {
  int n = 0;
  double mean_difference = 0, t = 0, p_one_sided = 1;
};
PairedTest PairedGreaterTest(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_SEED_STATS_H_
