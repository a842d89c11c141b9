// The benchmarks' timer: the median wall time of `repeats` calls of `fn`
// after one warm-up call; and the median of timings taken otherwise.
#ifndef HPT_BENCHMARKS_MEDIAN_TIME_H_
#define HPT_BENCHMARKS_MEDIAN_TIME_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace hpt {

// The median of `v` (the mean of the middle two for an even count).
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

template <typename Fn>
double MedianSeconds(int repeats, Fn fn) {
  fn();  // warm up
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace hpt

#endif  // HPT_BENCHMARKS_MEDIAN_TIME_H_
