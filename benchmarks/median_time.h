// The benchmarks' timer: the median wall time of `repeats` calls of `fn`
// after one warm-up call.
#ifndef HPT_BENCHMARKS_MEDIAN_TIME_H_
#define HPT_BENCHMARKS_MEDIAN_TIME_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace hpt {

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
