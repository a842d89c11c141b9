#include "hptctl/cost_views.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "devices/cost_settings.h"

namespace hpt {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.17g", v);
}

SweepPoint PointOf(const JobCosts& costs, CostOverrides settings) {
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

absl::StatusOr<SweepPoint> CostPoint(const WorkRecord& record, const CostOverrides& fixed,
                                     const CostOverrides& settings) {
  CostOverrides all = fixed;
  all.insert(all.end(), settings.begin(), settings.end());
  absl::StatusOr<JobCosts> costs = CostRecord(record, all);
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
                                              const CostOverrides& fixed) {
  std::vector<size_t> index(grids.size(), 0);
  std::vector<SweepPoint> points;
  if (grids.empty()) return points;
  while (true) {
    CostOverrides settings;
    for (size_t g = 0; g < grids.size(); ++g) {
      settings.push_back({grids[g].key, grids[g].values[index[g]]});
    }
    absl::StatusOr<SweepPoint> p = CostPoint(record, fixed, settings);
    if (!p.ok()) return p.status();
    points.push_back(std::move(*p));
    // The last grid fastest, the first slowest.
    int g = int(grids.size()) - 1;
    while (g >= 0 && ++index[g] == grids[g].values.size()) index[g--] = 0;
    if (g < 0) break;
  }
  return points;
}

std::string SweepTable(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points) {
  std::string out;
  for (const SweepGrid& g : grids) absl::StrAppend(&out, absl::StrFormat("%-18s ", g.key));
  absl::StrAppend(&out, absl::StrFormat("%9s %9s %10s %10s %12s %s\n", "time", "energy",
                                        "proj time", "proj energy", "LoRA step", "bound by"));
  for (const SweepPoint& p : points) {
    for (const auto& [k, v] : p.settings) absl::StrAppend(&out, absl::StrFormat("%-18s ", v));
    absl::StrAppend(&out, absl::StrFormat("%8.3fx %8.3fx %9.3fx %10.3fx %10.4g s %s\n",
                                          p.time_ratio, p.energy_ratio, p.projected_time_ratio,
                                          p.projected_energy_ratio, p.lora_step_s,
                                          p.bound_by.empty() ? "-" : p.bound_by));
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

// The plot's frame: where values land on the page.
struct SvgFrame {
  static constexpr double kW = 800, kH = 440, kLeft = 70, kRight = 270, kTop = 50, kBottom = 60;
  double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  std::vector<double> xs;  // the first key's values (or their indices)
  bool log_x = false;
  double x0 = 0, x1 = 1, y1 = 1;

  SvgFrame(const SweepGrid& first, const std::vector<SweepPoint>& points) {
    // x: the first key's values, as numbers when they all are, else evenly.
    bool numeric = true;
    for (const std::string& v : first.values) {
      double x = 0;
      numeric = numeric && absl::SimpleAtod(v, &x);
      xs.push_back(x);
    }
    if (!numeric) {
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = double(i);
    }
    const double lo = *std::min_element(xs.begin(), xs.end());
    const double hi = *std::max_element(xs.begin(), xs.end());
    log_x = numeric && xs.size() > 2 && lo > 0 && hi / lo >= 16;
    x0 = Xv(lo);
    x1 = Xv(hi) > x0 ? Xv(hi) : x0 + 1;
    y1 = 0;
    for (const SweepPoint& p : points) {
      y1 = std::max({y1, p.projected_time_ratio, p.projected_energy_ratio});
    }
    y1 = y1 > 0 ? y1 * 1.1 : 1;
  }
  double Xv(double x) const { return log_x ? std::log2(x) : x; }
  double Px(double x) const { return kLeft + (Xv(x) - x0) / (x1 - x0) * pw; }
  double Py(double y) const { return kTop + ph - y / y1 * ph; }

  // Axes, ticks, the 1x line and the labels.
  std::string Axes(const SweepGrid& first) const {
    std::string svg = absl::StrFormat(
        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n"
        "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n",
        kLeft, kTop + ph, kLeft + pw, kTop + ph, kLeft, kTop, kLeft, kTop + ph);
    // Ticks at a round step: 1, 2, 2.5 or 5 times a power of ten.
    const double raw = y1 / 1.1 / 5, magnitude = std::pow(10, std::floor(std::log10(raw)));
    double step = 10 * magnitude;
    for (double m : {1.0, 2.0, 2.5, 5.0}) {
      if (m * magnitude >= raw) {
        step = m * magnitude;
        break;
      }
    }
    for (int t = 0; t * step <= y1; ++t) {
      const double y = t * step;
      absl::StrAppend(&svg, absl::StrFormat(
                                "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.3gx</text>"
                                "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" "
                                "stroke=\"#ddd\"/>\n",
                                kLeft - 6, Py(y) + 4, y, kLeft, Py(y), kLeft + pw, Py(y)));
    }
    if (1.0 < y1) {
      absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" "
                                            "stroke=\"#888\" stroke-dasharray=\"2,3\"/>\n",
                                            kLeft, Py(1), kLeft + pw, Py(1)));
    }
    for (size_t i = 0; i < first.values.size(); ++i) {
      absl::StrAppend(&svg, absl::StrFormat("<text x=\"%g\" y=\"%g\" "
                                            "text-anchor=\"middle\">%s</text>\n",
                                            Px(xs[i]), kTop + ph + 18, first.values[i]));
    }
    absl::StrAppend(&svg, absl::StrFormat(
                              "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s%s</text>\n"
                              "<text x=\"16\" y=\"%g\" transform=\"rotate(-90 16 %g)\" "
                              "text-anchor=\"middle\">HpT vs GPU-only, projected</text>\n",
                              kLeft + pw / 2, kH - 18, first.key, log_x ? " (log scale)" : "",
                              kTop + ph / 2, kTop + ph / 2));
    return svg;
  }
};

}  // namespace

std::string SweepSvg(const std::vector<SweepGrid>& grids, const std::vector<SweepPoint>& points,
                     const std::string& title) {
  using F = SvgFrame;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n<text x=\"%g\" y=\"24\" font-size=\"15\">%s</text>\n",
      F::kW, F::kH, F::kLeft, title);
  if (grids.empty() || points.empty()) return svg + "</svg>\n";
  const SweepGrid& first = grids[0];
  const SvgFrame frame(first, points);
  absl::StrAppend(&svg, frame.Axes(first));
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
      const char* dash = metric == 1 ? " stroke-dasharray=\"6,4\"" : "";
      std::string path;
      for (size_t i = 0; i < per_line; ++i) {
        const SweepPoint& p = points[l + i * stride];
        const double y = metric == 0 ? p.projected_time_ratio : p.projected_energy_ratio;
        const double x = frame.Px(frame.xs[i]);
        absl::StrAppend(&path, i == 0 ? "M" : " L", absl::StrFormat("%.2f,%.2f", x, frame.Py(y)));
        absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" "
                                              "fill=\"%s\"/>\n",
                                              x, frame.Py(y), kColors[l]));
      }
      absl::StrAppend(&svg, absl::StrFormat("<path d=\"%s\" fill=\"none\" stroke=\"%s\" "
                                            "stroke-width=\"2\" stroke-opacity=\"0.8\"%s/>\n",
                                            path, kColors[l], dash));
      // Legend: the line's settings, then its time and energy entries.
      const double lx = F::kLeft + frame.pw + 16, top = F::kTop + 4 + 52.0 * double(l);
      if (metric == 0 && !label.empty()) {
        absl::StrAppend(&svg, absl::StrFormat("<text x=\"%g\" y=\"%g\">%s</text>\n", lx, top,
                                              label));
      }
      const double ly = top + 14 + 15.0 * metric;
      absl::StrAppend(&svg, absl::StrFormat(
                                "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" "
                                "stroke-width=\"2\"%s/><text x=\"%g\" y=\"%g\">%s</text>\n",
                                lx + 8, ly, lx + 32, ly, kColors[l], dash, lx + 38, ly + 4,
                                metric == 0 ? "time" : "energy"));
    }
  }
  return svg + "</svg>\n";
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
                                        const CostOverrides& fixed) {
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
  const CostKnob* knob = FindCostKnob(grid.key);
  if (knob == nullptr || !knob->numeric) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--target searches a numeric setting; ", grid.key, " is ",
        knob == nullptr ? "not a setting" : "not numeric"));
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
                                        double target, const CostOverrides& fixed) {
  absl::StatusOr<std::vector<double>> values = NumericValues(grid);
  if (!values.ok()) return values.status();
  const double first = values->front(), last = values->back();
  // Whole-number settings are searched in whole numbers.
  const bool whole = std::all_of(values->begin(), values->end(),
                                 [](double x) { return x == std::floor(x); });
  const ProbeAt eval = [&](double x) -> absl::StatusOr<Probe> {
    CostOverrides all = fixed;
    all.push_back({grid.key, SettingNumber(x)});
    absl::StatusOr<JobCosts> costs = CostRecord(record, all);
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
      if (t.track == track) kind = t.kind;
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
    events.push_back(absl::StrCat(
        "{\"name\": ", JsonString(t.type), ", \"cat\": ", JsonString(t.kind),
        ", \"ph\": \"X\", \"pid\": 1, \"tid\": ", tids[t.track],
        ", \"ts\": ", JsonNumber(t.start_s * 1e6), ", \"dur\": ",
        JsonNumber((t.finish_s - t.start_s) * 1e6), ", \"args\": {", absl::StrJoin(args, ", "),
        "}}"));
  }
  return absl::StrCat("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"job\": ", JsonString(job_id),
                      ", \"step\": ", timeline.step, ", \"makespan_s\": ",
                      JsonNumber(timeline.makespan_s), ", \"energy_j\": ",
                      JsonNumber(timeline.energy_j), "},\n\"traceEvents\": [\n",
                      absl::StrJoin(events, ",\n"), "\n]}\n");
}

}  // namespace hpt
