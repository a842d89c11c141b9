#include "coordinator/training/step_history.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpt {

std::shared_ptr<StepHistory> StepHistory::FromProto(const LossHistory& proto, int64_t steps) {
  auto history = std::make_shared<StepHistory>();
  absl::MutexLock lock(&history->mu_);
  const int64_t kept = std::min<int64_t>(steps, proto.step_losses_size());
  history->losses_.assign(proto.step_losses().begin(), proto.step_losses().begin() + kept);
  for (const EpochPoint& e : proto.epochs()) {
    if (e.last_step() < steps) history->epochs_.push_back(e);
  }
  history->predictions_ = proto.predictions();
  return history;
}

void StepHistory::AddStep(int64_t step, double loss) {
  if (step < 0) return;
  absl::MutexLock lock(&mu_);
  if (size_t(step) < losses_.size()) {
    losses_.resize(size_t(step));
    while (!epochs_.empty() && epochs_.back().last_step() >= step) epochs_.pop_back();
  }
  // A gap (steps not seen, e.g. before a checkpoint without history) is
  // filled with NaN, which plots leave out.
  losses_.resize(size_t(step), std::numeric_limits<float>::quiet_NaN());
  losses_.push_back(float(loss));
}

void StepHistory::AddEpoch(const EpochPoint& epoch) {
  absl::MutexLock lock(&mu_);
  while (!epochs_.empty() && epochs_.back().epoch() >= epoch.epoch()) epochs_.pop_back();
  epochs_.push_back(epoch);
}

void StepHistory::SetPredictions(TestPredictions predictions) {
  absl::MutexLock lock(&mu_);
  predictions_ = std::move(predictions);
}

int64_t StepHistory::steps() const {
  absl::MutexLock lock(&mu_);
  return int64_t(losses_.size());
}

std::optional<EpochPoint> StepHistory::LastEpoch() const {
  absl::MutexLock lock(&mu_);
  if (epochs_.empty()) return std::nullopt;
  return epochs_.back();
}

LossHistory StepHistory::ToProto() const {
  absl::MutexLock lock(&mu_);
  LossHistory proto;
  proto.mutable_step_losses()->Add(losses_.begin(), losses_.end());
  for (const EpochPoint& e : epochs_) *proto.add_epochs() = e;
  *proto.mutable_predictions() = predictions_;
  return proto;
}

JobHistory StepHistory::View(int max_points) const {
  if (max_points <= 0) max_points = 1000;
  absl::MutexLock lock(&mu_);
  JobHistory view;
  const int64_t n = int64_t(losses_.size());
  const int64_t bucket = std::max<int64_t>(1, (n + max_points - 1) / max_points);
  view.set_steps(n);
  view.set_bucket(bucket);
  for (int64_t first = 0; first < n; first += bucket) {
    const int64_t last = std::min(n, first + bucket);
    double sum = 0;
    int64_t count = 0;
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (int64_t s = first; s < last; ++s) {
      const float l = losses_[size_t(s)];
      if (std::isnan(l)) continue;
      sum += l;
      ++count;
      lo = std::min(lo, l);
      hi = std::max(hi, l);
    }
    if (count == 0) continue;
    view.add_first_step(first);
    view.add_loss_mean(float(sum / double(count)));
    view.add_loss_min(lo);
    view.add_loss_max(hi);
  }
  for (const EpochPoint& e : epochs_) *view.add_epochs() = e;
  *view.mutable_predictions() = predictions_;
  return view;
}

}  // namespace hpt
