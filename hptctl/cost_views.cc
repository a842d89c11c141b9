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
#include "common/device_kind.h"
#include "common/gpu_baseline.h"
#include "common/json_text.h"
#include "devices/cost_settings.h"
#include "pages/svg.h"

namespace hpt {
namespace {


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
    if (phase.phase() != "lora") continue;
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

namespace {

// Whether the ratios `of` gives stay within 0.1 % across the values of
// grid `g` wherever the other grids' values are the same.
template <typename Of>
bool UnmovedBy(size_t g, const std::vector<SweepPoint>& points, Of of) {
  std::map<std::vector<std::string>, std::vector<double>> first;  // others -> ratios
  const auto near = [](double a, double b) {
    return std::fabs(a - b) <= 1e-3 * std::max(std::fabs(a), std::fabs(b));
  };
  for (const SweepPoint& p : points) {
    std::vector<std::string> others;
    for (size_t k = 0; k < p.settings.size(); ++k) {
      if (k != g) others.push_back(p.settings[k].second);
    }
    const std::vector<double> ratios = of(p);
    const auto [it, added] = first.emplace(others, ratios);
    if (added) continue;
    for (size_t i = 0; i < ratios.size(); ++i) {
      if (!near(it->second[i], ratios[i])) return false;
    }
  }
  return true;
}

bool TimeUnmovedBy(size_t g, const std::vector<SweepPoint>& points) {
  return UnmovedBy(g, points, [](const SweepPoint& p) {
    return std::vector<double>{p.time_ratio, p.projected_time_ratio};
  });
}

}  // namespace

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
    if (grids[g].values.size() < 2 || !TimeUnmovedBy(g, points)) continue;
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

std::string WhatIfChange(const Job& as_run, const Job& what_if) {
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

namespace {

// The first key's values as the x axis: numbers where they all are (on a
// log scale where they span 16x or more), else evenly spaced; each labelled
// with its value.
void SetSweepX(const SweepGrid& first, PlotArea* plot, std::vector<double>* xs) {
  bool numeric = true;
  for (const std::string& v : first.values) {
    double x = 0;
    numeric = numeric && absl::SimpleAtod(v, &x);
    xs->push_back(x);
  }
  if (!numeric) {
    for (size_t i = 0; i < xs->size(); ++i) (*xs)[i] = double(i);
  }
  const double lo = *std::min_element(xs->begin(), xs->end());
  const double hi = *std::max_element(xs->begin(), xs->end());
  const bool log_x = numeric && xs->size() > 2 && lo > 0 && hi / lo >= 16;
  plot->SetX(lo, hi, log_x);
  std::vector<std::pair<double, std::string>> ticks;
  for (size_t i = 0; i < xs->size(); ++i) ticks.emplace_back((*xs)[i], first.values[i]);
  plot->SetXTicks(std::move(ticks));
}

// A line's legend beside the plot: its settings, then its time (solid) and
// energy (dashed) entries.
void SweepLegend(const std::string& label, size_t line, const char* color, PlotArea* plot) {
  const double lx = plot->right_edge() + 16, top = plot->top() + 4 + 52.0 * double(line);
  if (!label.empty()) {
    absl::StrAppend(&plot->body, absl::StrFormat("<text x=\"%g\" y=\"%g\">%s</text>\n", lx, top,
                                                 Escape(label)));
  }
  for (int metric = 0; metric < 2; ++metric) {
    const double ly = top + 14 + 15.0 * metric;
    absl::StrAppend(&plot->body, absl::StrFormat(
        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" stroke-width=\"2\"%s/>"
        "<text x=\"%g\" y=\"%g\">%s</text>\n",
        lx + 8, ly, lx + 32, ly, color, metric == 1 ? " stroke-dasharray=\"6,4\"" : "",
        lx + 38, ly + 4, metric == 0 ? "time" : "energy"));
  }
}

}  // namespace

std::string SweepSvg(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points,
                     const std::string& title) {
  PlotArea plot(800, 440, /*left=*/70, /*right=*/270, /*top=*/50, /*bottom=*/60);
  // A file of its own: the page's stylesheet is not there.
  const std::string frame = absl::StrFormat(
      "<style>.grid{stroke:#ddd}.axis,.tick-mark{stroke:black}</style>"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%d\" y=\"24\" font-size=\"15\">%s</text>\n",
      plot.left(), Escape(title));
  const std::string attributes =
      "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"12\"";
  if (grids.empty() || points.empty()) {
    plot.body = frame;
    return plot.Svg("sweep", attributes) + "\n";
  }
  const SweepGrid& first = grids[0];
  std::vector<double> xs;
  SetSweepX(first, &plot, &xs);
  double y_top = 0;
  for (const SweepPoint& p : points) {
    y_top = std::max({y_top, p.projected_time_ratio, p.projected_energy_ratio});
  }
  plot.SetY(0, y_top > 0 ? y_top * 1.1 : 1);
  plot.SetYTicks(6, "x");
  if (1.0 < y_top * 1.1) {
    absl::StrAppend(&plot.body, absl::StrFormat(
        "<line x1=\"%d\" y1=\"%g\" x2=\"%d\" y2=\"%g\" stroke=\"#888\" "
        "stroke-dasharray=\"2,3\"/>\n",
        plot.left(), plot.Y(1), plot.right_edge(), plot.Y(1)));
  }
  // One line per combination of the other keys (the first 6). Points run
  // with the first key slowest: line l takes points l, l + stride, ...
  const size_t per_line = first.values.size();
  const size_t stride = points.size() / per_line;
  const size_t lines = std::min<size_t>(6, stride);
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                  "#8c564b"};
  for (size_t l = 0; l < lines; ++l) {
    std::string label;
    for (size_t k = 1; k < points[l].settings.size(); ++k) {
      absl::StrAppend(&label, k > 1 ? " " : "", points[l].settings[k].first, "=",
                      points[l].settings[k].second);
    }
    for (int metric = 0; metric < 2; ++metric) {
      std::string path;
      for (size_t i = 0; i < per_line; ++i) {
        const SweepPoint& p = points[l + i * stride];
        const double x = plot.X(xs[i]);
        const double y = plot.Y(metric == 0 ? p.projected_time_ratio : p.projected_energy_ratio);
        absl::StrAppend(&path, i == 0 ? "M" : " L", absl::StrFormat("%.2f,%.2f", x, y));
        absl::StrAppend(&plot.body, absl::StrFormat(
            "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n", x, y, kColors[l]));
      }
      absl::StrAppend(&plot.body, absl::StrFormat(
          "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-opacity=\"0.8\"%s/>\n",
          path, kColors[l], metric == 1 ? " stroke-dasharray=\"6,4\"" : ""));
    }
    SweepLegend(label, l, kColors[l], &plot);
  }
  plot.Axes(first.key + (plot.x_log() ? " (log scale)" : ""), "HpT vs GPU-only, projected");
  // Lines drawn over each other are said (under the title), or a reader
  // sees one line short.
  std::vector<std::string> coincide;
  for (size_t g = 1; g < grids.size(); ++g) {
    const bool same = UnmovedBy(g, points, [](const SweepPoint& p) {
      return std::vector<double>{p.projected_time_ratio, p.projected_energy_ratio};
    });
    if (same && grids[g].values.size() > 1) coincide.push_back(grids[g].key);
  }
  if (!coincide.empty()) {
    absl::StrAppend(&plot.body,
                    absl::StrFormat("<text class=\"coincide\" x=\"%d\" y=\"%d\">the lines of "
                                    "each %s coincide: its values move neither ratio</text>\n",
                                    plot.left(), 42, Escape(absl::StrJoin(coincide, ", "))));
  }
  plot.body = frame + plot.body;
  return plot.Svg("sweep", attributes) + "\n";
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

std::string ChromeTrace(const std::string& job_id, const StepTimeline& timeline) {
  std::map<std::string, int> tids;
  for (const LaidTask& t : timeline.tasks) tids.try_emplace(t.track, int(tids.size()) + 1);
  std::vector<std::string> events;
  events.push_back(absl::StrCat(
      "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": ",
      JsonString(absl::StrCat(job_id, " step ", timeline.step, " (", timeline.phase,
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
