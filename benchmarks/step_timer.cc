#include "benchmarks/step_timer.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "common/device_kind.h"
#include "common/training_phase.h"

namespace hpt {
namespace {

// The tasks' measured seconds so far, by device kind.
std::map<DeviceKind::Name, double> MeasuredByKind(const TrainerUpdate& u) {
  std::map<DeviceKind::Name, double> by_kind;
  for (const DeviceCost& d : u.device_costs) by_kind[d.kind()] += d.cost().measured_s();
  return by_kind;
}

void Print(const std::string& label, const StepTimer::Totals& t) {
  if (t.steps() == 0) {
    std::printf("%-10s no steps measured\n", label.c_str());
    return;
  }
  const double steps = double(t.steps());
  const double wall = t.wall_s / steps;
  const double median = t.median_step_s();
  double compute = 0;
  std::printf("%-10s %lld steps, wall per step mean %.4f s, median %.4f s; mean:", label.c_str(),
              static_cast<long long>(t.steps()), wall, median);
  for (const auto& [kind, s] : t.compute_s) {
    std::printf(" %s compute %.4f s,", KindName(kind).c_str(), s / steps);
    compute += s / steps;
  }
  std::printf(" rest (coordinator, serialisation) %.4f s\n", wall - compute);
}

}  // namespace

double StepTimer::Totals::median_step_s() const {
  if (step_s.empty()) return 0;
  std::vector<double> s = step_s;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

void StepTimer::Observe(const TrainerUpdate& u, double now_s) {
  // Progress inside an evaluation: the evaluation is timed from the last
  // run's end to the update that closes the epoch.
  if (!u.progress.evaluating().empty()) return;
  const double dt = now_s - last_s_;
  std::map<DeviceKind::Name, double> measured = MeasuredByKind(u);
  const TrainingPhase::Name phase = PhaseOrFull(u.hpt.phase());
  const int64_t step = u.progress.step();
  if (u.epoch_losses.size() != last_epochs_) {
    eval_s_ = dt;
    eval_phase_ = phase;
    last_epochs_ = u.epoch_losses.size();
  } else if (last_step_ >= 0 && step > last_step_ && phase == last_phase_) {
    Totals& totals = by_phase_[phase];
    totals.wall_s += dt;
    totals.step_s.insert(totals.step_s.end(), step - last_step_, dt / double(step - last_step_));
    for (const auto& [kind, s] : measured) totals.compute_s[kind] += s - last_measured_[kind];
  }
  last_step_ = step;
  last_phase_ = phase;
  last_measured_ = std::move(measured);
  last_s_ = now_s;
}

StepTimer::Totals StepTimer::PhaseTotals(TrainingPhase::Name phase) const {
  const auto it = by_phase_.find(PhaseOrFull(phase));
  return it == by_phase_.end() ? Totals{} : it->second;
}

void StepTimer::Report(int64_t test_values) const {
  for (TrainingPhase::Name phase : kTrainingPhases) {
    // A trial is shown only where one ran.
    if (phase == TrainingPhase::trial && PhaseTotals(phase).steps() == 0) continue;
    Print(PhaseName(phase), PhaseTotals(phase));
  }
  const Totals full = PhaseTotals(TrainingPhase::full);
  const Totals lora = PhaseTotals(TrainingPhase::lora);
  if (full.steps() > 0 && lora.steps() > 0) {
    const double f = full.wall_s / double(full.steps()), l = lora.wall_s / double(lora.steps());
    std::printf(
        "LoRA-phase step / full-phase step wall time: mean %.2f (full is %.2fx the LoRA step), "
        "median %.2f\n",
        l / f, f / l, lora.median_step_s() / full.median_step_s());
  }
  std::printf("last evaluation (%s phase, %lld test values): %.2f s\n",
              PhaseName(eval_phase_).c_str(), static_cast<long long>(test_values), eval_s_);
}

}  // namespace hpt
