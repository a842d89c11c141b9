#include "coordinator/spec/run_length.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/check_windows.h"

namespace hpt {

int64_t StepsPerEpoch(const JobSpec& spec, int64_t train_samples) {
  const TrainingSpec& training = spec.training();
  const int64_t batch = std::max<int64_t>(training.batch_size(), 1);
  int64_t steps = (train_samples + batch - 1) / batch;
  const int64_t width = std::max<int64_t>(spec.placement().gpu_workers(), 1);
  if (train_samples % batch != 0 && train_samples % batch < width) --steps;
  if (training.max_steps_per_epoch() > 0) {
    steps = std::min<int64_t>(steps, training.max_steps_per_epoch());
  }
  return std::max<int64_t>(steps, 0);
}

std::string NoCheckNote(const JobSpec& spec, int64_t train_samples) {
  const HptSpec& h = spec.hpt();
  const int64_t window = h.check_window_steps();
  const int64_t per_epoch = StepsPerEpoch(spec, train_samples);
  if (h.mode() == TrainingMode::full || window <= 0 || per_epoch <= 0) return "";
  const int64_t steps = per_epoch * spec.training().epochs();
  const int64_t windows = FirstCheckWindows(h.switch_rule(), h.trend_windows());
  const int64_t check = windows * window;
  if (steps >= check) return "";
  const int64_t epochs = (check + per_epoch - 1) / per_epoch;
  return absl::StrCat("hpt: the run's ", steps, " steps (", spec.training().epochs(),
                      spec.training().epochs() == 1 ? " epoch" : " epochs", " of ", per_epoch,
                      ") end before the phase controller's first check, at step ", check, " (the ",
                      Ordinal(windows), " window of ", window,
                      "), so it trains every parameter throughout and HpT saves nothing; "
                      "give --epochs=",
                      epochs, " or more, or a shorter hpt.check_window_samples");
}

}  // namespace hpt
