#include "cost/switch_diagnosis.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/check_windows.h"
#include "cost/text_report.h"

namespace hpt {
namespace {

// One test over the checks: failures and the closest check.
struct TestTally {
  int failed = 0;
  const PhaseEvent* closest = nullptr;
  double margin = 0;
  bool read = false;  // the rule reads this test
  std::vector<int64_t> passed_at;  // the steps of the checks it passed
};

void Tally(const PhaseEvent& e, bool passed, double margin, TestTally* t) {
  if (!passed) ++t->failed;
  if (passed) t->passed_at.push_back(e.iteration());
  if (t->closest == nullptr || margin < t->margin) {
    t->closest = &e;
    t->margin = margin;
  }
}

// A test that never passed: its closest check, and by how much it missed.
// One that passed at some checks: those checks' steps (the first few).
std::string TestLine(const std::string& name, const TestTally& t, int checks,
                     const std::string& detail) {
  if (t.passed_at.empty()) {
    return absl::StrFormat(
        "  %s failed %d of %d checks; closest at step %d: %.3g of its bound "
        "(%s)",
        name, t.failed, checks, t.closest->iteration(), t.margin, detail);
  }
  constexpr size_t kShown = 6;
  std::vector<int64_t> shown(t.passed_at.begin(),
                             t.passed_at.begin() + std::min(kShown, t.passed_at.size()));
  return absl::StrFormat("  %s failed %d of %d checks; passed at step%s %s%s", name, t.failed,
                         checks, t.passed_at.size() > 1 ? "s" : "", absl::StrJoin(shown, ", "),
                         t.passed_at.size() > kShown
                             ? absl::StrFormat(" and %d more", t.passed_at.size() - kShown)
                             : "");
}

// A job's checks and trials, added up.
struct CheckSummary {
  TestTally loss, weights;
  TestTally margin;  // trials ended by the margin test
  int checks = 0, both = 0, rising = 0, trials = 0, significant = 0, lora_lower = 0;
  const PhaseEvent* open_trial = nullptr;  // begun, not yet ended
};

CheckSummary Summarise(const HptStatus& h) {
  CheckSummary s;
  for (const PhaseEvent& e : h.events()) {
    if (e.kind() == PhaseEvent::TRIAL_START) s.open_trial = &e;
    if (e.kind() == PhaseEvent::TRIAL_END) {
      s.open_trial = nullptr;
      ++s.trials;
      if (e.significant()) ++s.significant;
      if (e.significant() && e.mean_lora() < e.mean_full()) ++s.lora_lower;
      if (!e.trial_detail().empty()) Tally(e, !e.significant(), e.trial_margin(), &s.margin);
    }
    if (e.kind() != PhaseEvent::CHECK) continue;
    ++s.checks;
    Tally(e, e.loss_passed(), e.loss_margin(), &s.loss);
    // Rules that read the loss alone pass the weight test with margin 0.
    if (!(e.weight_passed() && e.weight_margin() == 0)) s.weights.read = true;
    Tally(e, e.weight_passed(), e.weight_margin(), &s.weights);
    if (e.loss_passed() && e.weight_passed()) ++s.both;
    if (e.loss_rising()) ++s.rising;
  }
  return s;
}

// A job with no check yet: when the first comes, or why none can.
std::string NoCheckLine(const Job& job, const std::string& lead, int64_t windows) {
  const int64_t window = job.hpt().check_window_steps();
  const HptSpec& spec = job.spec().hpt();
  const int64_t first = FirstCheckWindows(spec.switch_rule(), spec.trend_windows());
  if (windows >= first) {  // still to come
    return absl::StrFormat("%s: the first check closes the %s window of %d steps, at step %d", lead,
                           Ordinal(first), window, first * window);
  }
  const int64_t total_steps = job.progress().total_steps();
  return absl::StrFormat(
      "%s: no check ran; %s and the first check closes the %s (a shorter "
      "hpt.check_window_samples, or more epochs, gives checks)",
      lead,
      windows == 0 ? absl::StrFormat("the run's %d steps do not fill one window of %d steps,",
                                     total_steps, window)
                   : absl::StrFormat("the run has %d window%s of %d steps", windows,
                                     windows == 1 ? "" : "s", window),
      Ordinal(first));
}

// How often both tests passed and what the trials found; under the margin
// test, the trial that came closest.
void AppendTrialLines(const CheckSummary& s, std::vector<std::string>* out) {
  std::string passed = absl::StrFormat("  both passed at %d checks", s.both);
  if (s.rising > 0) {
    absl::StrAppend(&passed, absl::StrFormat(" (%d of them on a rising loss, no trial)", s.rising));
  }
  if (s.margin.closest != nullptr) {
    absl::StrAppend(&passed, absl::StrFormat("; %d trials, %d of them with LoRA's loss not shown "
                                             "within the margin",
                                             s.trials, s.significant));
    out->push_back(passed);
    out->push_back(absl::StrFormat("  closest trial at step %d: %.3g of its bound (%s)",
                                   s.margin.closest->iteration(), s.margin.margin,
                                   s.margin.closest->trial_detail()));
    return;
  }
  absl::StrAppend(&passed, absl::StrFormat("; %d trials, %d of them with LoRA's loss "
                                           "significantly different",
                                           s.trials, s.significant));
  // The paper's two-sided t-test also rejects a LoRA copy that learns faster.
  if (s.significant > 0) absl::StrAppend(&passed, absl::StrFormat(" (%d lower)", s.lora_lower));
  out->push_back(passed);
}

}  // namespace

std::vector<std::string> ClosestApproach(const Job& job) {
  std::vector<std::string> out;
  const HptStatus& h = job.hpt();
  const bool finished = JobEnded(job.state());
  if (job.spec().hpt().mode() == TrainingMode::full || h.switch_step() >= 0 ||
      h.check_window_steps() <= 0) {
    return out;
  }
  const CheckSummary s = Summarise(h);
  const int64_t windows = job.progress().total_steps() / h.check_window_steps();
  // A cancelled or failed job may be resumed: it did not switch "ever".
  const std::string lead = job.state() == SUCCEEDED ? "never switched"
                           : finished               ? "no switch before it stopped"
                                                    : "no switch yet";
  if (s.checks == 0) return {NoCheckLine(job, lead, windows)};
  out.push_back(absl::StrFormat("%s: %d checks over %d windows of %d steps", lead, s.checks,
                                windows, h.check_window_steps()));
  out.push_back(TestLine("loss test  ", s.loss, s.checks, s.loss.closest->loss_detail()));
  if (s.weights.read) {
    out.push_back(TestLine("weight test", s.weights, s.checks, s.weights.closest->weight_detail()));
  }
  AppendTrialLines(s, &out);
  // A trial begun and not ended: the count of ended trials is not the
  // whole story.
  if (s.open_trial != nullptr) {
    out.push_back(finished ? absl::StrFormat("  the trial begun at step %d had not ended when the "
                                             "run did (more epochs let it end)",
                                             s.open_trial->iteration())
                           : absl::StrFormat("  a trial is running since step %d",
                                             s.open_trial->iteration()));
  }
  return out;
}

std::string SwitchWhy(const Job& job) {
  const HptStatus& h = job.hpt();
  if (h.switch_step() < 0) return "";
  const PhaseEvent* sw = nullptr;
  for (const PhaseEvent& e : h.events()) {
    if (e.kind() == PhaseEvent::SWITCH) sw = &e;
  }
  if (sw == nullptr) return "";
  const PhaseEvent* check = nullptr;    // the last check that passed both tests
  const PhaseEvent* verdict = nullptr;  // the trial's end that switched
  int trials = 0;
  for (const PhaseEvent& e : h.events()) {
    if (&e == sw) break;
    if (e.kind() == PhaseEvent::CHECK && e.loss_passed() && e.weight_passed()) check = &e;
    if (e.kind() == PhaseEvent::TRIAL_END) {
      ++trials;
      verdict = &e;
    }
  }
  std::string out = absl::StrCat("after step ", sw->iteration());
  if (check != nullptr) absl::StrAppend(&out, ": both tests passed at step ", check->iteration());
  if (verdict == nullptr || verdict->iteration() != sw->iteration()) {
    return absl::StrCat(out, check != nullptr ? "; " : ": ", sw->reason());
  }
  absl::StrAppend(&out, check != nullptr ? "; " : ": ", "after ",
                  trials > 1 ? absl::StrCat(trials, " LoRA trial windows") : "the LoRA trial", ", ",
                  sw->reason());
  return verdict->trial_detail().empty()
             ? absl::StrCat(out, absl::StrFormat(" (t-test p %.3g)", verdict->p()))
             : absl::StrCat(out, " (", verdict->trial_detail(), ")");
}

bool TrainedWithoutSwitch(const Job& job) {
  const HptStatus& h = job.hpt();
  return job.progress().step() > 0 && h.switch_step() < 0 && h.layer_switch_steps().empty();
}

std::string NothingSavedWhy(const Job& job) {
  return absl::StrCat(job.state() == SUCCEEDED ? "" : " yet",
                      ": without a switch every step trains as GPU-only training would");
}

}  // namespace hpt
