#include "coordinator/training/switch_policy.h"

#include <algorithm>

namespace hpt {

SamplingPolicy::SamplingPolicy(int64_t check_window_steps)
    : window_(std::max<int64_t>(1, check_window_steps)) {}

SwitchPolicy::Decision SamplingPolicy::AfterStep(const ControllerSample& sample) {
  samples_.push_back(sample);
  // The first check closes the third window: a trial can start there.
  const int64_t done = sample.step + 1;
  if (done % window_ == 0 && done >= 3 * window_) return Decision::kRestartTrial;
  return Decision::kContinue;
}

}  // namespace hpt
