#include "benchmarks/frontier_plot.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pages/svg.h"

namespace hpt {
namespace {

constexpr int kWidth = 760, kPanel = 250, kTitle = 28, kLegend = 44;
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                "#8c564b", "#e377c2", "#17becf"};

const char* Colour(size_t i) { return kColours[i % (sizeof(kColours) / sizeof(kColours[0]))]; }

// y of the point at `step` on a seed's line, or nothing.
const FrontierPoint* At(const FrontierSeries& s, int64_t step) {
  for (const FrontierPoint& p : s.points) {
    if (p.step == step) return &p;
  }
  return nullptr;
}

enum class Value { kRmse, kTimePaper, kTimeFastest };

double Of(const FrontierPoint& p, Value v) {
  return v == Value::kRmse ? p.rmse_ratio : v == Value::kTimePaper ? p.time_paper : p.time_fastest;
}

// One seed's line of `v`, its points, its knee ring and its rule mark.
void DrawSeries(const FrontierSeries& s, const char* colour, Value v, bool dashed,
                PlotArea* plot) {
  std::vector<std::pair<double, double>> pixels;
  for (const FrontierPoint& p : s.points) {
    pixels.emplace_back(plot->X(double(p.step)), plot->Y(Of(p, v)));
  }
  absl::StrAppend(&plot->body,
                  absl::StrFormat("<polyline class=\"seed\" stroke=\"%s\"%s points=\"%s\"/>",
                                  colour, dashed ? " stroke-dasharray=\"5 3\"" : "",
                                  Points(pixels)));
  for (const auto& [x, y] : pixels) {
    absl::StrAppend(&plot->body, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" "
                                                 "fill=\"%s\"/>", x, y, colour));
  }
  if (const FrontierPoint* k = At(s, s.knee)) {
    absl::StrAppend(&plot->body,
                    absl::StrFormat("<circle class=\"knee\" cx=\"%.1f\" cy=\"%.1f\" r=\"6\" "
                                    "stroke=\"%s\"><title>seed %d knee: step %d</title>"
                                    "</circle>",
                                    plot->X(double(k->step)), plot->Y(Of(*k, v)), colour, s.seed,
                                    s.knee));
  }
  if (const FrontierPoint* r = At(s, s.rule_step)) {
    absl::StrAppend(&plot->body,
                    absl::StrFormat("<path class=\"rule\" d=\"M%.1f %.1f l5 9 h-10 z\" "
                                    "fill=\"%s\"><title>seed %d rule: step %d</title></path>",
                                    plot->X(double(r->step)), plot->Y(Of(*r, v)) - 3, colour,
                                    s.seed, s.rule_step));
  }
}

// One panel: `values` of every seed's points against the step (the first
// solid, the second dashed).
std::string Panel(const std::vector<FrontierSeries>& seeds, int64_t total_steps,
                  const std::vector<Value>& values, const std::string& y_label, int y_offset,
                  const std::string& id) {
  double lo = 1, hi = 1;
  for (const FrontierSeries& s : seeds) {
    for (const FrontierPoint& p : s.points) {
      for (Value v : values) {
        lo = std::min(lo, Of(p, v));
        hi = std::max(hi, Of(p, v));
      }
    }
  }
  const double pad = std::max(0.01, (hi - lo) * 0.08);
  PlotArea plot(kWidth, kPanel, 64, 16, 12, 40);
  plot.SetX(0, double(total_steps));
  plot.SetY(lo - pad, hi + pad);
  plot.Axes("switch step (the last point: never switched)", y_label);
  // The full-parameter level: RMSE as full's, time as GPU-only's.
  absl::StrAppend(&plot.body,
                  absl::StrFormat("<line class=\"ref\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" "
                                  "y2=\"%.1f\"/>",
                                  plot.left(), plot.right_edge(), plot.Y(1), plot.Y(1)));
  for (size_t i = 0; i < seeds.size(); ++i) {
    for (size_t v = 0; v < values.size(); ++v) {
      DrawSeries(seeds[i], Colour(i), values[v], v > 0, &plot);
    }
  }
  return plot.Svg(id, absl::StrFormat("x=\"0\" y=\"%d\"", y_offset));
}

}  // namespace

std::string FrontierSvg(const std::string& app, const std::vector<FrontierSeries>& seeds,
                        int64_t total_steps, const std::string& fastest,
                        const std::string& rule) {
  const int height = kTitle + 2 * kPanel + kLegend;
  std::string legend;
  for (size_t i = 0; i < seeds.size(); ++i) {
    absl::StrAppend(&legend, absl::StrFormat("<tspan fill=\"%s\">seed %d</tspan>  ", Colour(i),
                                             seeds[i].seed));
  }
  return absl::StrCat(
      absl::StrFormat("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
                      "width=\"%d\" height=\"%d\" font-family=\"sans-serif\">",
                      kWidth, height, kWidth, height),
      "<style>.grid{stroke:#e3e3e3}.axis{stroke:#444}.tick-mark{stroke:#444}"
      ".tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}"
      ".seed{fill:none;stroke-width:1.2;opacity:.85}.ref{stroke:#888;stroke-dasharray:4 3}"
      ".knee{fill:none;stroke-width:2}.title{font-size:14px;font-weight:bold}"
      ".legend{font-size:12px}</style>",
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>",
      absl::StrFormat("<text class=\"title\" x=\"64\" y=\"18\">%s: where the switch lands, "
                      "%d seeds (ring: knee; triangle: rule %s)</text>",
                      Escape(app), seeds.size(), Escape(rule)),
      Panel(seeds, total_steps, {Value::kRmse}, "test RMSE / full-parameter", kTitle,
            "frontier-rmse"),
      Panel(seeds, total_steps, {Value::kTimePaper, Value::kTimeFastest},
            "GPU-only time / HpT's", kTitle + kPanel, "frontier-time"),
      absl::StrFormat("<text class=\"legend\" x=\"64\" y=\"%d\">%s</text>", height - 26,
                      legend),
      absl::StrFormat("<text class=\"legend\" x=\"64\" y=\"%d\">time: solid against the "
                      "paper's baseline (eager), dashed against %s (the fastest GPU-only)</text>",
                      height - 8, Escape(fastest)),
      "</svg>\n");
}

}  // namespace hpt
