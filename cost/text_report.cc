#include "cost/text_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/cost_phase.h"
#include "common/gpu_baseline.h"
#include "common/launch_mode.h"
#include "common/training_phase.h"
#include "cost/device_totals.h"
#include "cost/switch_diagnosis.h"

namespace hpt {

bool JobEnded(JobState state) {
  return state == SUCCEEDED || state == FAILED || state == CANCELLED;
}

std::string StateName(JobState state) {
  return absl::AsciiStrToLower(JobState_Name(state));
}

std::string TrialVerdict(const PhaseEvent& e) {
  if (e.kind() != PhaseEvent::TRIAL_END || !e.reason().empty()) return "";  // the reason says
  if (!e.trial_detail().empty()) {  // the margin test
    return e.significant() ? "not within the margin: another trial" : "within the margin: switch";
  }
  return e.significant() ? "significant: another trial" : "no difference: switch";
}

std::string SkillOverPersistence(const QualityMetrics& q, const std::string& unit) {
  if (q.persistence_rmse() <= 0) return "";
  return absl::StrFormat("skill %.3f over persistence (RMSE %.4g%s)", q.skill(),
                         q.persistence_rmse(), unit);
}

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "-";
  // Under ten seconds a tenth shows: a short job is not "0s".
  if (seconds < 9.95) return absl::StrFormat("%.1fs", seconds);
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

namespace {

std::string Eng(double v, const char* unit) {
  const double a = std::fabs(v);
  if (a == 0) return absl::StrCat("0 ", unit);
  struct Prefix { double scale; const char* name; };
  for (Prefix p : {Prefix{1e3, "k"}, Prefix{1, ""}, Prefix{1e-3, "m"}, Prefix{1e-6, "u"},
                   Prefix{1e-9, "n"}}) {
    if (a >= p.scale) return absl::StrFormat("%.3g %s%s", v / p.scale, p.name, unit);
  }
  return absl::StrFormat("%.3g %s", v, unit);
}

std::string EventLine(const PhaseEvent& e) {
  switch (e.kind()) {
    case PhaseEvent::CHECK: {
      std::string line = absl::StrFormat(
          "  check   step %-6d L = %s  d = %s  loss %s  weight %s", e.iteration(),
          absl::StrJoin(e.window_losses(), " ",
                        [](std::string* out, double v) { absl::StrAppendFormat(out, "%.4g", v); }),
          absl::StrJoin(e.weight_distances(), " ",
                        [](std::string* out, double v) { absl::StrAppendFormat(out, "%.4g", v); }),
          e.loss_passed() ? "pass" : "fail", e.weight_passed() ? "pass" : "fail");
      if (!e.reason().empty()) absl::StrAppend(&line, "  (", e.reason(), ")");
      // What decided each failed test.
      if (!e.loss_passed() && !e.loss_detail().empty()) {
        absl::StrAppend(&line, "; ", e.loss_detail());
      }
      if (!e.weight_passed() && !e.weight_detail().empty()) {
        absl::StrAppend(&line, "; ", e.weight_detail());
      }
      return line;
    }
    case PhaseEvent::TRIAL_START:
      return absl::StrFormat("  trial   step %-6d LoRA copy starts beside the full model",
                             e.iteration());
    case PhaseEvent::TRIAL_END: {
      const std::string verdict = TrialVerdict(e).empty() ? e.reason() : TrialVerdict(e);
      if (!e.trial_detail().empty()) {
        return absl::StrFormat("  margin  step %-6d mean full %.4g  mean LoRA %.4g  %s; %s",
                               e.iteration(), e.mean_full(), e.mean_lora(), verdict,
                               e.trial_detail());
      }
      return absl::StrFormat(
          "  t-test  step %-6d mean full %.4g  mean LoRA %.4g  t %.3f  dof %.0f  p %.4g  %s",
          e.iteration(), e.mean_full(), e.mean_lora(), e.t(), e.dof(), e.p(), verdict);
    }
    case PhaseEvent::SWITCH:
      return absl::StrFormat("  switch  step %-6d LoRA phase from step %d", e.iteration(),
                             e.iteration() + 1);
    default:
      return "";
  }
}

}  // namespace

static std::string WindowText(const HptStatus& h) {
  if (h.check_window_samples() <= 0 || h.batch_size() <= 0) {
    return absl::StrCat(h.check_window_steps(), " steps");
  }
  return absl::StrCat(h.check_window_samples(), " samples = ", h.check_window_steps(),
                      " steps at batch ",
                      h.batch_size());
}

namespace {

// The phases table: steps, wall and simulated time, energy by device.
void AppendPhases(const HptStatus& h, std::string* report) {
  std::string& out = *report;
  absl::StrAppend(&out, "\nphases\n");
  // As wide as the longest phase name ("lora_gpu" after a fallback).
  int width = 7;
  for (const PhaseCost& c : h.phases()) {
    width = std::max(width, int(CostPhaseName(c.phase()).size()));
  }
  absl::StrAppend(&out, absl::StrFormat("  %-*s %-13s %9s %12s %12s  %s\n", width, "phase",
                                        "steps", "wall", "simulated", "energy", "by device"));
  for (const PhaseCost& c : h.phases()) {
    // The switch's programming follows a step: one, or under layerwise
    // each layer's (listed below the table), from the first to the last.
    const std::string steps = c.first_step() < 0 ? "-"
                              : c.phase() != CostPhase::switch_
                                  ? absl::StrCat(c.first_step(), "-", c.last_step())
                              : c.first_step() == c.last_step()
                                  ? absl::StrCat("after ", c.last_step())
                                  : absl::StrCat("after ", c.first_step(), "-", c.last_step());
    std::vector<std::string> parts;
    // By device kind in name order (a proto map's own order is arbitrary).
    const std::map<std::string, double> energy(c.device_energy_j().begin(),
                                               c.device_energy_j().end());
    for (const auto& [kind, j] : energy) {
      auto busy = c.device_busy_s().find(kind);
      parts.push_back(busy == c.device_busy_s().end()
                          ? absl::StrCat(kind, " ", Eng(j, "J"))
                          : absl::StrCat(kind, " ", Eng(busy->second, "s"), "/", Eng(j, "J")));
    }
    absl::StrAppend(
        &out, absl::StrFormat("  %-*s %-13s %9s %12s %12s  %s\n", width, CostPhaseName(c.phase()),
                              steps, FormatDuration(c.wall_s()), Eng(c.simulated_s(), "s"),
                              Eng(c.energy_j(), "J"), absl::StrJoin(parts, ", ")));
  }
  // How the GPU workers took each phase's steps.
  for (const PhaseDispatch& d : h.dispatch()) {
    std::vector<std::string> ways;
    if (d.runs() > 0) {
      ways.push_back(absl::StrFormat("%d steps in %d runs of %.3g on average (%s)", d.run_steps(),
                                     d.runs(), double(d.run_steps()) / double(d.runs()),
                                     LaunchName(d.launch())));
    }
    if (d.task_steps() > 0) ways.push_back(absl::StrCat(d.task_steps(), " task by task"));
    absl::StrAppend(&out, "  ", PhaseName(d.phase()),
                    " on the GPU workers: ", absl::StrJoin(ways, ", "), "\n");
    if (!d.launch_note().empty()) absl::StrAppend(&out, "    launch: ", d.launch_note(), "\n");
  }
}

// "1.23x", or "-" where the figure was not measured.
std::string Ratio(double r) { return r > 0 ? absl::StrFormat("%.2fx", r) : "-"; }

// HpT against each GPU baseline: the modelled rows, then those measured on
// a worker's device, and which GPU-only baseline is fastest.
void AppendBaselines(const CostComparison& cmp, std::string* report) {
  std::string& out = *report;
  if (cmp.baselines_size() == 0) return;
  for (bool measured : {false, true}) {
    std::string rows, sources;
    for (const BaselineComparison& b : cmp.baselines()) {
      if (b.measured() != measured) continue;
      if (!b.not_run().empty()) {
        absl::StrAppend(&rows, absl::StrFormat("  %-14s %s\n", b.baseline(), b.not_run()));
        absl::StrAppend(&sources, "  ", b.baseline(), ": ", b.source(), "\n");
        continue;
      }
      absl::StrAppend(&rows, absl::StrFormat("  %-14s %10s %12s %12s %8s %8s %10s %11s\n",
                                             b.baseline(), Eng(b.step_s(), "s"),
                                             Eng(b.hpt_time_s(), "s"),
                                             Eng(b.gpu_only_time_s(), "s"), Ratio(b.time_ratio()),
                                             Ratio(b.energy_ratio()),
                                             Ratio(b.projected_time_ratio()),
                                             Ratio(b.projected_energy_ratio())));
      // A modelled source names its baseline already.
      absl::StrAppend(&sources, "  ",
                      b.measured() ? absl::StrCat(b.baseline(), ": ", b.source(),
                                                  "; measured on ", b.measured_on())
                                   : b.source(),
                      "\n");
    }
    if (rows.empty()) continue;
    absl::StrAppend(&out, measured
                              ? "\nagainst each GPU baseline, measured (the GPU side timed on a "
                                "worker's device; HpT's devices modelled; '-': not measured)\n"
                              : "\nagainst each GPU baseline, modelled (GPU steps run this way "
                                "in both)\n");
    absl::StrAppend(&out, absl::StrFormat("  %-14s %10s %12s %12s %8s %8s %10s %11s\n",
                                          "baseline", "full step", "HpT", "GPU-only", "time",
                                          "energy", "proj time", "proj energy"));
    absl::StrAppend(&out, rows, sources);
  }
  if (const BaselineComparison* fastest = FastestBaseline(cmp, false); fastest != nullptr) {
    absl::StrAppend(&out, absl::StrFormat(
                              "  fastest GPU-only: %s (modelled), HpT %s its time: the baseline "
                              "the paper's claim must beat\n",
                              fastest->baseline(), Ratio(fastest->time_ratio())));
  }
  if (const BaselineComparison* fastest = FastestBaseline(cmp, true); fastest != nullptr) {
    absl::StrAppend(&out, absl::StrFormat(
                              "  fastest GPU-only measured on this job's GPU: %s, HpT %s its "
                              "time\n",
                              fastest->baseline(), Ratio(fastest->time_ratio())));
  }
}

// The GPU side: kernels the full phase's steps really launched.
void AppendGpuKernels(const Job& job, std::string* report) {
  std::string& out = *report;
  const HptStatus& h = job.hpt();
  const DeviceTotals gpu = DeviceTotalsOf(job.device_costs());
  int64_t full_steps = 0, fallback_steps = 0;
  for (const PhaseCost& c : h.phases()) {
    if (c.phase() == CostPhase::full) full_steps = c.last_step() - c.first_step() + 1;
    if (c.phase() == CostPhase::lora_gpu) fallback_steps = c.last_step() - c.first_step() + 1;
  }
  if (gpu.gpu_kernels > 0 && full_steps > 0 && gpu.gpu_s > 0) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "\nGPU kernels: %.0f a %s step (trials, loads and evaluation "
                  "included), %.0f %% of simulated GPU time launch-bound (waiting on the host)\n",
                  gpu.gpu_kernels / double(full_steps + fallback_steps),
                  fallback_steps > 0 ? "GPU (full-phase or fallback)" : "full-phase",
                  100 * gpu.launch_bound_s / gpu.gpu_s));
  }
}

// The ReRAM chip: frozen layers and their copies.
void AppendReramChip(const HptStatus& h, std::string* report) {
  std::string& out = *report;
  if (h.reram_layers_size() > 0) {
    // Layers alike in shape and copies share a line.
    std::map<std::tuple<int64_t, int64_t, int64_t, int>, std::vector<std::string>> groups;
    int64_t tiles = 0;
    for (const ReramLayerPlacement& r : h.reram_layers()) {
      groups[{r.in_features(), r.out_features(), r.duplication(), r.worker()}].push_back(
          r.layer());
      tiles += r.tiles();
    }
    absl::StrAppend(&out, "\nReRAM chip: frozen layers and their copies (", tiles,
                    " tiles used; copies read input vectors in parallel)\n");
    for (const auto& [key, names] : groups) {
      const auto& [in, n, copies, worker] = key;
      absl::StrAppend(&out, absl::StrFormat("  worker %d  %3d x %-6s  %d copies  e.g. %s\n",
                                            worker, names.size(),
                                            absl::StrCat(in, "x", n), copies, names.front()));
    }
  }
}

// The comparison's energy line; with no ratio (the reference GPU's profile
// gives no board power: cost_comparison.cc), "not known".
void AppendEnergyRow(double hpt_j, double gpu_only_j, double ratio, std::string* out) {
  if (ratio > 0) {
    absl::StrAppend(out, absl::StrFormat("  %-8s %12s %12s %7.2fx\n", "energy", Eng(hpt_j, "J"),
                                         Eng(gpu_only_j, "J"), ratio));
  } else {
    absl::StrAppend(out, absl::StrFormat("  %-8s %12s %12s %8s  (not known: the reference GPU's "
                                         "profile gives no board power)\n",
                                         "energy", "-", "-", "-"));
  }
}

// HpT against GPU-only, as run and projected, and where the time goes.
void AppendComparison(const CostComparison& cmp, std::string* report) {
  std::string& out = *report;
  absl::StrAppend(&out, "\nHpT vs GPU-only full-parameter training",
                  cmp.baseline() == GpuBaseline::GPU_BASELINE_UNSPECIFIED
                      ? ""
                      : absl::StrCat(" (GPU baseline: ", GpuBaselineName(cmp.baseline()), ")"),
                  "\n");
  absl::StrAppend(&out, absl::StrFormat("  %-8s %12s %12s %8s\n", "", "HpT", "GPU-only", "ratio"));
  absl::StrAppend(&out, absl::StrFormat("  %-8s %12s %12s %7.2fx\n", "time",
                                        Eng(cmp.hpt_time_s(), "s"),
                                        Eng(cmp.gpu_only_time_s(), "s"), cmp.time_ratio()));
  AppendEnergyRow(cmp.hpt_energy_j(), cmp.gpu_only_energy_j(), cmp.energy_ratio(), &out);
  if (!cmp.method().empty()) absl::StrAppend(&out, "  how: ", cmp.method(), "\n");
  if (cmp.project_steps() > 0) {
    absl::StrAppend(&out, absl::StrFormat("\nprojected to %g epoch(s) (%d steps)\n",
                                          cmp.project_epochs(), cmp.project_steps()));
    absl::StrAppend(&out, absl::StrFormat("  %-8s %12s %12s %8s\n", "", "HpT", "GPU-only",
                                          "ratio"));
    absl::StrAppend(&out, absl::StrFormat("  %-8s %12s %12s %7.2fx\n", "time",
                                          Eng(cmp.projected_hpt_time_s(), "s"),
                                          Eng(cmp.projected_gpu_only_time_s(), "s"),
                                          cmp.projected_time_ratio()));
    AppendEnergyRow(cmp.projected_hpt_energy_j(), cmp.projected_gpu_only_energy_j(),
                    cmp.projected_energy_ratio(), &out);
    absl::StrAppend(&out, "  how: ", cmp.projection_method(), "\n");
  }
  AppendBaselines(cmp, &out);
  if (cmp.time_notes_size() > 0) {
    absl::StrAppend(&out, "\nwhere the simulated time goes\n");
    for (const std::string& note : cmp.time_notes()) absl::StrAppend(&out, "  ", note, "\n");
  }
}

std::string OptimizerText(const OptimizerConfig& o) {
  return absl::StrCat(o.type() == ADAMW ? "AdamW" : "Adam", " lr ",
                      absl::StrFormat("%.3g", o.learning_rate()),
                      o.weight_decay() > 0 ? absl::StrFormat(" wd %.3g", o.weight_decay()) : "");
}

// How the job trains: both phases' optimizers and where their rates come
// from (the preset's paper recipe, scaled to the batch), and the switch rule.
void AppendRecipe(const JobSpec& spec, std::string* out) {
  if (!spec.has_training()) return;
  const TrainingSpec& t = spec.training();
  const HptSpec& h = spec.hpt();
  absl::StrAppend(out, "training: batch ", t.batch_size(), ", ", t.epochs(), " epochs, ",
                  OptimizerText(t.optimizer()));
  if (t.step_lr_step_size() > 0 && t.step_lr_gamma() < 1) {
    absl::StrAppend(out, absl::StrFormat(", StepLR x%.3g every %d epochs", t.step_lr_gamma(),
                                         t.step_lr_step_size()));
  }
  if (!t.learning_rate_rule().empty()) absl::StrAppend(out, "\n  rate: ", t.learning_rate_rule());
  absl::StrAppend(out, "\nLoRA phase: ", OptimizerText(h.lora_optimizer()), ", constant");
  if (!h.lora_learning_rate_rule().empty()) {
    absl::StrAppend(out, "\n  rate: ", h.lora_learning_rate_rule());
  }
  // A normalised spec names its rule; an unset one predates that.
  absl::StrAppend(out, "\nswitch rule: ",
                  h.switch_rule() == SwitchRule::SWITCH_RULE_UNSPECIFIED
                      ? "not recorded"
                      : SwitchRule::Name_Name(h.switch_rule()));
  if (h.switch_rule() == SwitchRule::consecutive) {
    absl::StrAppend(out, " (", h.consecutive_checks(), " passing checks in a row)");
  } else if (h.switch_rule() == SwitchRule::trend) {
    absl::StrAppend(out, absl::StrFormat(" (the 95 %% bound of the loss's fall over the last %d "
                                         "windows leaves under %g %% to gain by the end)",
                                         h.trend_windows(), h.trend_gain() * 100));
  } else if (h.switch_rule() == SwitchRule::plateau) {
    absl::StrAppend(out, absl::StrFormat(" (a window's mean loss not %g standard errors below "
                                         "the one before)",
                                         h.plateau_z()));
  } else if (h.switch_rule() == SwitchRule::layerwise) {
    absl::StrAppend(out, absl::StrFormat(" (each layer freezes under its own adapter when the "
                                         "paper's weight test, bound %g, passes on its own "
                                         "[W_q | W_v]; the job switches with the last layer; "
                                         "no trial)\n",
                                         h.weight_threshold()));
    return;
  }
  if (h.trial_test() == TrialTest::none) {
    absl::StrAppend(out, "; no trial: a passing check switches");
  } else if (h.trial_test() == TrialTest::margin) {
    absl::StrAppend(out, absl::StrFormat("; trial: LoRA's loss shown within %g %% of the full "
                                         "model's (one-sided %g %% bound)",
                                         h.trial_margin() * 100, (1 - h.alpha()) * 100));
  } else {
    absl::StrAppend(out, absl::StrFormat("; trial: the paper's two-sided t-test (alpha %g)",
                                         h.alpha()));
  }
  absl::StrAppend(out, "\n");
}

// The phase controller's events, routine failed checks left out.
void AppendEvents(const HptStatus& h, std::string* report) {
  std::string& out = *report;
  int shown = 0;
  std::string events;
  for (const PhaseEvent& e : h.events()) {
    // Checks that failed both tests are routine; show the rest.
    if (e.kind() == PhaseEvent::CHECK && !e.loss_passed() && !e.weight_passed()) continue;
    absl::StrAppend(&events, EventLine(e), "\n");
    ++shown;
  }
  absl::StrAppend(&out, "\nphase controller (", h.events_size(), " events; ", shown,
                  " shown, checks failing both tests hidden)\n", events);
}

}  // namespace

std::string FormatReport(const Job& job) {
  std::string out;
  const HptStatus& h = job.hpt();
  absl::StrAppend(&out, "job ", job.job_id(), " (", job.name(), ")  ", StateName(job.state()),
                  "  wall ", FormatDuration(job.progress().elapsed_s()), "\n");
  const Placement::Name placement =
      h.placement() == Placement::PLACEMENT_UNSPECIFIED ? Placement::gpu : h.placement();
  absl::StrAppend(&out, "placement ", Placement::Name_Name(placement), "  window k ", WindowText(h),
                  "  steps ", job.progress().step(), "\n");
  AppendRecipe(job.spec(), &out);
  if (!h.group_note().empty()) absl::StrAppend(&out, "data-parallel group: ", h.group_note(), "\n");
  if (!h.fallback_reason().empty()) {
    absl::StrAppend(&out, "fallback: ", h.fallback_reason(),
                    " (phase lora_gpu below: LoRA-phase steps on the GPU workers)\n");
  }
  if (h.switch_step() >= 0) {
    absl::StrAppend(&out, "switched to LoRA at step ", h.switch_step(), " (",
                    h.lora_trainable_parameters(), " trainable parameters; ranks ");
    std::vector<std::string> ranks;
    std::map<int, int> histogram;
    for (const auto& [name, r] : h.lora_ranks()) ++histogram[r];
    for (const auto& [r, n] : histogram) ranks.push_back(absl::StrCat(n, "x r", r));
    absl::StrAppend(&out, absl::StrJoin(ranks, ", "), ")\n");
    if (const std::string why = SwitchWhy(job); !why.empty()) {
      absl::StrAppend(&out, "  switched ", why, "\n");
    }
  }
  bool some_layers = false;
  if (!h.layer_switch_steps().empty()) {
    std::vector<std::string> layers;
    for (int l = 0; l < h.layer_switch_steps_size(); ++l) {
      const int64_t at = h.layer_switch_steps(l);
      some_layers |= at >= 0;
      layers.push_back(at >= 0 ? absl::StrCat(l, " at step ", at) : absl::StrCat(l, " in full"));
    }
    absl::StrAppend(&out, "layers to LoRA: ", absl::StrJoin(layers, ", "), "\n");
  }
  if (h.switch_step() < 0) {
    absl::StrAppend(&out, some_layers ? "no whole-model switch: the layers not yet switched "
                                        "train in full\n"
                                      : "no switch: trained full-parameter throughout\n");
    for (const std::string& line : ClosestApproach(job)) {
      absl::StrAppend(&out, line, "\n");
    }
  }
  AppendPhases(h, &out);
  AppendGpuKernels(job, &out);
  AppendReramChip(h, &out);
  AppendComparison(h.comparison(), &out);
  const QualityMetrics& q = job.test_metrics();
  if (q.values() > 0) {
    const std::string unit = job.data().unit().empty() ? "" : " " + job.data().unit();
    absl::StrAppend(&out, absl::StrFormat(
        "\ntest metrics (data units, %d values)\n  RMSE %.4g%s  MAE %.4g%s  NSE %.4f  R2 %.4f\n",
        q.values(), q.rmse(), unit, q.mae(), unit, q.nse(), q.r2()));
    if (job.progress().selected_epoch() > 0) {
      absl::StrAppend(&out, absl::StrFormat(
          "  of epoch %d, whose weights the job keeps: it validated best (MSE %.4g, "
          "training.select: best_validation)\n",
          job.progress().selected_epoch(), job.progress().selected_validation_loss()));
    }
    if (q.persistence_rmse() > 0) {
      absl::StrAppend(&out, "  ", SkillOverPersistence(q, unit),
                      q.skill() < 0 ? ": the model LOSES to persistence" : "",
                      absl::StrFormat("; climatology (%s) RMSE %.4g%s\n", q.climatology(),
                                      q.climatology_rmse(), unit));
    }
  } else if (job.state() == SUCCEEDED) {
    absl::StrAppend(&out, "\nno test metrics: the job's data has no test split (",
                    job.data().split().empty() ? "none was given" : job.data().split(), ")\n");
  }
  AppendEvents(h, &out);
  if (!job.error().empty()) absl::StrAppend(&out, "\nerror: ", job.error(), "\n");
  return out;
}

const BaselineComparison* FastestBaseline(const CostComparison& comparison, bool measured) {
  const BaselineComparison* fastest = nullptr;
  for (const BaselineComparison& b : comparison.baselines()) {
    if (!b.not_run().empty() || !(b.gpu_only_time_s() > 0)) continue;
    if (b.measured() != measured || (measured && !b.measured_on_gpu())) continue;
    if (fastest == nullptr || b.gpu_only_time_s() < fastest->gpu_only_time_s()) fastest = &b;
  }
  return fastest;
}

std::string FormatBaselines(const CostComparison& comparison) {
  std::string out;
  AppendBaselines(comparison, &out);
  return out;
}

}  // namespace hpt
