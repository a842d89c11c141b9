#include "hptctl/cost_views.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/cost_phase.h"
#include "common/device_kind.h"
#include "common/gpu_baseline.h"
#include "common/json_text.h"
#include "cost/device_totals.h"
#include "devices/cost_settings.h"

namespace hpt {
namespace {

// Two ratios one change left where they were: within 0.1 %, below the
// third significant figure the tables print. The sweep's "moves nothing"
// and whatif's "time unmoved" ask this one question.
bool Unmoved(double a, double b) {
  return std::fabs(a - b) <= 1e-3 * std::max(std::fabs(a), std::fabs(b));
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.17g", v);
}

SweepPoint PointOf(const JobCosts& costs, CostSettings settings) {
  SweepPoint p;
  p.settings = std::move(settings);
  const CostComparison& c = costs.comparison;
  p.time_ratio = c.time_ratio();
  p.energy_ratio = c.energy_ratio();
  p.projected_time_ratio = c.projected_time_ratio();
  p.projected_energy_ratio = c.projected_energy_ratio();
  p.hpt_s = c.hpt_time_s();
  p.hpt_j = c.hpt_energy_j();
  p.gpu_only_s = c.gpu_only_time_s();
  p.gpu_only_j = c.gpu_only_energy_j();
  p.lora_step_s = c.lora_step_s();
  for (const PhaseCost& phase : costs.phases) {
    if (phase.phase() != CostPhase::lora) continue;
    double busiest = -1;
    for (const auto& [kind, s] : phase.device_busy_s()) {
      if (s > busiest) {
        busiest = s;
        p.bound_by = kind;
      }
    }
  }
  return p;
}

absl::StatusOr<SweepPoint> CostPoint(const WorkRecord& record, const CostSettings& fixed,
                                     const CostSettings& settings) {
  CostSettings all = fixed;
  all.insert(all.end(), settings.begin(), settings.end());
  absl::StatusOr<JobCosts> costs = CostOfRecord(record, all);
  if (!costs.ok()) return costs.status();
  return PointOf(*costs, settings);
}


}  // namespace

absl::StatusOr<SweepGrid> ParseGrid(const std::string& text) {
  absl::StatusOr<std::pair<std::string, std::string>> kv = ParseCostSetting(text);
  if (!kv.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grid '", text, "' is not KEY=V1,V2,... (e.g. systolic_rows=32,64,128)"));
  }
  SweepGrid grid;
  grid.key = kv->first;
  for (absl::string_view v : absl::StrSplit(kv->second, ',', absl::SkipEmpty())) {
    grid.values.emplace_back(v);
  }
  if (grid.values.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--grid ", grid.key, ": no values"));
  }
  return grid;
}

absl::StatusOr<std::vector<SweepPoint>> Sweep(const WorkRecord& record,
                                              const std::vector<SweepGrid>& grids,
                                              const CostSettings& fixed) {
  std::vector<size_t> index(grids.size(), 0);
  std::vector<SweepPoint> points;
  if (grids.empty()) return points;
  while (true) {
    CostSettings settings, costed;
    for (size_t g = 0; g < grids.size(); ++g) {
      settings.push_back({grids[g].key, grids[g].values[index[g]]});
      costed.push_back({grids[g].key, grids[g].costed.empty() ? grids[g].values[index[g]]
                                                               : grids[g].costed[index[g]]});
    }
    absl::StatusOr<SweepPoint> p = CostPoint(record, fixed, costed);
    if (!p.ok()) return p.status();
    p->settings = settings;
    points.push_back(std::move(*p));
    // The last grid fastest, the first slowest.
    int g = int(grids.size()) - 1;
    while (g >= 0 && ++index[g] == grids[g].values.size()) index[g--] = 0;
    if (g < 0) break;
  }
  return points;
}

bool UnmovedBy(size_t g, const std::vector<SweepPoint>& points, SweepRatios ratios) {
  std::map<std::vector<std::string>, std::pair<double, double>> first;  // others -> ratios
  for (const SweepPoint& p : points) {
    std::vector<std::string> others;
    for (size_t k = 0; k < p.settings.size(); ++k) {
      if (k != g) others.push_back(p.settings[k].second);
    }
    const std::pair<double, double> r =
        ratios == SweepRatios::kTime ? std::pair{p.time_ratio, p.projected_time_ratio}
                                     : std::pair{p.projected_time_ratio, p.projected_energy_ratio};
    const auto [it, added] = first.emplace(others, r);
    if (!added && !(Unmoved(it->second.first, r.first) && Unmoved(it->second.second, r.second))) {
      return false;
    }
  }
  return true;
}

std::string SweepTable(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points) {
  std::string out;
  for (const SweepGrid& g : grids) absl::StrAppend(&out, absl::StrFormat("%-18s ", g.key));
  absl::StrAppend(&out, absl::StrFormat("%9s %9s %10s %10s %12s %s\n", "time", "energy",
                                        "proj time", "proj energy", "LoRA step", "bound by"));
  for (const SweepPoint& p : points) {
    for (const auto& [k, v] : p.settings) absl::StrAppend(&out, absl::StrFormat("%-18s ", v));
    // An energy ratio of 0 is one not known (a reference GPU with no board power).
    const auto ratio = [](double r) { return r > 0 ? absl::StrFormat("%.3fx", r) : "-"; };
    absl::StrAppend(&out, absl::StrFormat("%9s %9s %10s %11s %10.4g s %s\n",
                                          ratio(p.time_ratio), ratio(p.energy_ratio),
                                          ratio(p.projected_time_ratio),
                                          ratio(p.projected_energy_ratio), p.lora_step_s,
                                          p.bound_by.empty() ? "-" : p.bound_by));
  }
  // A setting that moves nothing is said, rather than left as identical
  // rows (and lines drawn over each other in the SVG).
  std::set<std::string> bound;
  for (const SweepPoint& p : points) {
    if (!p.bound_by.empty()) bound.insert(p.bound_by);
  }
  for (size_t g = 0; g < grids.size(); ++g) {
    if (grids[g].values.size() < 2 || !UnmovedBy(g, points, SweepRatios::kTime)) continue;
    // Why, where a LoRA-phase device's setting meets a step another bounds.
    const std::string& key = grids[g].key;
    const bool lora_device = absl::StartsWith(key, "reram_") || absl::StartsWith(key, "systolic_");
    const bool other_bounds = bound.size() == 1 && !absl::StartsWith(key, *bound.begin() + "_");
    absl::StrAppend(&out, "note: no value of ", key, " moves the time ratios of this job",
                    lora_device && other_bounds
                        ? absl::StrCat(" (each LoRA step here is bound by ", *bound.begin(), ")")
                        : "",
                    "\n");
  }
  return out;
}

std::string SweepCsv(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points) {
  std::vector<std::string> header;
  for (const SweepGrid& g : grids) header.push_back(g.key);
  for (const char* c : {"time_ratio", "energy_ratio", "projected_time_ratio",
                        "projected_energy_ratio", "hpt_s", "hpt_j", "gpu_only_s", "gpu_only_j",
                        "lora_step_s", "bound_by"}) {
    header.push_back(c);
  }
  std::string out = absl::StrJoin(header, ",") + "\n";
  for (const SweepPoint& p : points) {
    std::vector<std::string> row;
    for (const auto& [k, v] : p.settings) row.push_back(v);
    for (double v : {p.time_ratio, p.energy_ratio, p.projected_time_ratio,
                     p.projected_energy_ratio, p.hpt_s, p.hpt_j, p.gpu_only_s, p.gpu_only_j,
                     p.lora_step_s}) {
      row.push_back(absl::StrFormat("%.9g", v));
    }
    row.push_back(p.bound_by);
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
  }
  return out;
}

std::string SweepJson(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points) {
  std::vector<std::string> keys, rows;
  for (const SweepGrid& g : grids) keys.push_back(JsonString(g.key));
  for (const SweepPoint& p : points) {
    std::vector<std::string> settings;
    for (const auto& [k, v] : p.settings) {
      settings.push_back(absl::StrCat(JsonString(k), ": ", JsonString(v)));
    }
    rows.push_back(absl::StrCat(
        "    {\"settings\": {", absl::StrJoin(settings, ", "),
        "}, \"time_ratio\": ", JsonNumber(p.time_ratio),
        ", \"energy_ratio\": ", JsonNumber(p.energy_ratio),
        ", \"projected_time_ratio\": ", JsonNumber(p.projected_time_ratio),
        ", \"projected_energy_ratio\": ", JsonNumber(p.projected_energy_ratio),
        ", \"hpt_s\": ", JsonNumber(p.hpt_s), ", \"hpt_j\": ", JsonNumber(p.hpt_j),
        ", \"gpu_only_s\": ", JsonNumber(p.gpu_only_s), ", \"gpu_only_j\": ",
        JsonNumber(p.gpu_only_j), ", \"lora_step_s\": ", JsonNumber(p.lora_step_s),
        ", \"bound_by\": ", JsonString(p.bound_by), "}"));
  }
  return absl::StrCat("{\n  \"keys\": [", absl::StrJoin(keys, ", "), "],\n  \"points\": [\n",
                      absl::StrJoin(rows, ",\n"), "\n  ]\n}\n");
}

absl::StatusOr<std::pair<std::string, double>> ParseTarget(const std::string& text) {
  absl::StatusOr<std::pair<std::string, std::string>> kv = ParseCostSetting(text);
  double v = 0;
  if (!kv.ok() || (kv->first != "time" && kv->first != "energy") ||
      !absl::SimpleAtod(kv->second, &v) || !(v > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--target '", text, "' is not time=RATIO or energy=RATIO (e.g. time=11.9)"));
  }
  return std::make_pair(kv->first, v);
}

absl::StatusOr<TargetResult> FindTarget(const WorkRecord& record, const SweepGrid& grid,
                                        const std::string& metric, double target,
                                        const CostSettings& fixed) {
  const bool energy = metric == "energy";
  return FindTarget(
      record, grid,
      [energy](const JobCosts& c) {
        return energy ? c.comparison.projected_energy_ratio() : c.comparison.projected_time_ratio();
      },
      metric, target, fixed);
}

namespace {

// The grid's values as numbers, sorted, for a numeric setting.
absl::StatusOr<std::vector<double>> NumericValues(const SweepGrid& grid) {
  const CostSettingInfo* setting = FindCostSetting(grid.key);
  if (setting == nullptr || !setting->takes_number) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--target searches a numeric setting; ", grid.key, " is ",
        setting == nullptr ? "not a setting" : "not numeric"));
  }
  std::vector<double> values;
  for (const std::string& v : grid.values) {
    double x = 0;
    if (!absl::SimpleAtod(v, &x)) {
      return absl::InvalidArgumentError(absl::StrCat("--grid ", grid.key, ": '", v,
                                                     "' is not a number"));
    }
    values.push_back(x);
  }
  std::sort(values.begin(), values.end());
  return values;
}

// The searched setting at one value: the point costed there and the ratio
// the search follows.
struct Probe {
  SweepPoint point;
  double ratio = 0;
};
using ProbeAt = std::function<absl::StatusOr<Probe>(double)>;

// Bisects [lo, hi], where the ratio crosses `target` (rising or falling),
// down to whole numbers or 1e-9; returns the probe on the target's side
// and its value in `value`.
absl::StatusOr<Probe> Bisect(const ProbeAt& eval, double lo, double hi, bool rising, bool whole,
                             double target, Probe at, double* value) {
  for (int i = 0; i < 60 && (whole ? hi - lo > 1 : hi - lo > 1e-9 * std::fabs(hi)); ++i) {
    const double mid = whole ? std::floor((lo + hi) / 2) : (lo + hi) / 2;
    absl::StatusOr<Probe> m = eval(mid);
    if (!m.ok()) return m.status();
    if ((m->ratio >= target) == rising) {
      hi = mid;
      at = *m;
    } else {
      lo = mid;
    }
  }
  *value = hi;
  return at;
}

}  // namespace

absl::StatusOr<TargetResult> FindTarget(const WorkRecord& record, const SweepGrid& grid,
                                        const RatioOf& ratio, const std::string& metric,
                                        double target, const CostSettings& fixed) {
  absl::StatusOr<std::vector<double>> values = NumericValues(grid);
  if (!values.ok()) return values.status();
  const double first = values->front(), last = values->back();
  // Whole-number settings are searched in whole numbers.
  const bool whole = std::all_of(values->begin(), values->end(),
                                 [](double x) { return x == std::floor(x); });
  const ProbeAt eval = [&](double x) -> absl::StatusOr<Probe> {
    CostSettings all = fixed;
    all.push_back({grid.key, SettingNumber(x)});
    absl::StatusOr<JobCosts> costs = CostOfRecord(record, all);
    if (!costs.ok()) return costs.status();
    return Probe{PointOf(*costs, {{grid.key, SettingNumber(x)}}), ratio(*costs)};
  };
  TargetResult r;
  double worst = 1e300, worst_at = 0;
  Probe best;
  best.ratio = -1;
  std::optional<Probe> previous;
  double previous_x = 0;
  for (double x : *values) {
    absl::StatusOr<Probe> p = eval(x);
    if (!p.ok()) return p.status();
    if (p->ratio < worst) {
      worst = p->ratio;
      worst_at = x;
    }
    if (p->ratio > best.ratio) {
      best = *p;
      r.best_at = x;
    }
    if (previous && (previous->ratio - target) * (p->ratio - target) <= 0) {
      const bool rising = p->ratio >= previous->ratio;
      absl::StatusOr<Probe> at = Bisect(eval, previous_x, x, rising, whole, target, *p, &r.value);
      if (!at.ok()) return at.status();
      r.reached = true;
      r.ratio = at->ratio;
      r.message = absl::StrFormat("%s=%s reaches %s %.4gx (target %.4gx)", grid.key,
                                  SettingNumber(r.value), metric, r.ratio, target);
      return r;
    }
    previous = *p;
    previous_x = x;
  }
  if (worst >= target) {
    // Every value already does: the least ratio in range still reaches it.
    r.reached = true;
    r.value = worst_at;
    r.ratio = worst;
    r.message = absl::StrFormat(
        "every %s in [%s, %s] reaches %s %.4gx: the least is %.4gx at %s=%s", grid.key,
        SettingNumber(first), SettingNumber(last), metric, target, worst, grid.key,
        SettingNumber(worst_at));
    return r;
  }
  r.ratio = best.ratio;
  r.message = absl::StrFormat("no %s in [%s, %s] reaches %s %.4gx: the best is %.4gx at %s=%s",
                              grid.key, SettingNumber(first), SettingNumber(last), metric,
                              target, r.ratio, grid.key, SettingNumber(r.best_at));
  absl::StrAppend(&r.message,
                  best.point.bound_by.empty()
                      ? "; the job never reached the LoRA phase, so HpT is GPU-only"
                      : absl::StrFormat("; there a LoRA-phase step takes %.4g s and %s bounds "
                                        "it (the busiest device kind)",
                                        best.point.lora_step_s, best.point.bound_by));
  return r;
}

std::string WhatIfChange(const Job& as_run, const Job& what_if, bool gpu_changed) {
  const CostComparison& a = as_run.hpt().comparison();
  const CostComparison& b = what_if.hpt().comparison();
  if (!(a.hpt_time_s() > 0)) return "";
  // An energy ratio of 0 is one not known (a reference GPU with no board power).
  const auto ratio = [](double r) { return r > 0 ? absl::StrFormat("%.3gx", r) : "-"; };
  std::string out = absl::StrFormat("HpT vs GPU-only (%s baseline)  %10s %10s\n",
                                    GpuBaselineName(b.baseline()), "as run", "what if");
  for (const auto& [name, before, after] :
       {std::tuple{"time", a.time_ratio(), b.time_ratio()},
        {"energy", a.energy_ratio(), b.energy_ratio()},
        {"projected time", a.projected_time_ratio(), b.projected_time_ratio()},
        {"projected energy", a.projected_energy_ratio(), b.projected_energy_ratio()}}) {
    absl::StrAppend(&out,
                    absl::StrFormat("  %-30s %10s %10s\n", name, ratio(before), ratio(after)));
  }
  // A time that did not move, on a GPU side mostly spent launching kernels:
  // the host's dispatch, which a faster GPU does not shorten.
  if (!gpu_changed || !Unmoved(a.time_ratio(), b.time_ratio())) {
    return out;
  }
  const DeviceTotals gpu = DeviceTotalsOf(what_if.device_costs());
  if (gpu.gpu_s > 0 && gpu.launch_bound_s >= 0.5 * gpu.gpu_s) {
    absl::StrAppend(&out,
                    absl::StrFormat("  time unmoved: %.0f %% of the GPU's simulated time waits "
                                    "on the host (launching kernels, calling ops), not on the "
                                    "GPU's work, which a faster GPU does not shorten\n",
                                    100 * gpu.launch_bound_s / gpu.gpu_s));
  }
  return out;
}

std::string ChromeTrace(const std::string& job_id, const StepTimeline& timeline) {
  std::map<std::string, int> tids;
  for (const LaidTask& t : timeline.tasks) tids.try_emplace(t.track, int(tids.size()) + 1);
  std::vector<std::string> events;
  events.push_back(absl::StrCat(
      "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": ",
      JsonString(absl::StrCat(job_id, " step ", timeline.step, " (", CostPhaseName(timeline.phase),
                              ", simulated)")),
      "}}"));
  for (const auto& [track, tid] : tids) {
    std::string kind;
    for (const LaidTask& t : timeline.tasks) {
      if (t.track == track) kind = KindName(t.kind);
    }
    events.push_back(absl::StrCat("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, "
                                  "\"tid\": ",
                                  tid, ", \"args\": {\"name\": ",
                                  JsonString(absl::StrCat(kind, " ", track)), "}}"));
  }
  for (const LaidTask& t : timeline.tasks) {
    std::vector<std::string> args = {
        absl::StrCat("\"chain\": ", JsonString(t.chain)),
        absl::StrCat("\"simulated_s\": ", JsonNumber(t.finish_s - t.start_s)),
        absl::StrCat("\"energy_j\": ", JsonNumber(t.cost.energy_j())),
        absl::StrCat("\"task_simulated_s\": ", JsonNumber(t.cost.simulated_s())),
        absl::StrCat("\"bytes_in\": ", t.bytes_in),
        absl::StrCat("\"transfer_us\": ", JsonNumber(t.transfer_s * 1e6))};
    for (const auto& [name, value] : t.cost.counters()) {
      args.push_back(absl::StrCat(JsonString(name), ": ", JsonNumber(value)));
    }
    std::sort(args.begin() + 6, args.end());
    events.push_back(absl::StrCat("{\"name\": ", JsonString(t.type),
                                  ", \"cat\": ", JsonString(KindName(t.kind)),
                                  ", \"ph\": \"X\", \"pid\": 1, \"tid\": ", tids[t.track],
                                  ", \"ts\": ", JsonNumber(t.start_s * 1e6),
                                  ", \"dur\": ", JsonNumber((t.finish_s - t.start_s) * 1e6),
                                  ", \"args\": {", absl::StrJoin(args, ", "), "}}"));
  }
  return absl::StrCat("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"job\": ", JsonString(job_id),
                      ", \"step\": ", timeline.step, ", \"makespan_s\": ",
                      JsonNumber(timeline.makespan_s), ", \"energy_j\": ",
                      JsonNumber(timeline.energy_j), "},\n\"traceEvents\": [\n",
                      absl::StrJoin(events, ",\n"), "\n]}\n");
}

}  // namespace hpt
