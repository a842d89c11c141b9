// SweepSvg (cost_views.h): a sweep's projected ratios as a plot of its own.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hptctl/cost_views.h"
#include "pages/svg.h"

namespace hpt {

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
    absl::StrAppend(&plot->body,
                    absl::StrFormat("<text x=\"%g\" y=\"%g\">%s</text>\n", lx, top, Escape(label)));
  }
  for (int metric = 0; metric < 2; ++metric) {
    const double ly = top + 14 + 15.0 * metric;
    absl::StrAppend(
        &plot->body,
        absl::StrFormat(
            "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" stroke-width=\"2\"%s/>"
            "<text x=\"%g\" y=\"%g\">%s</text>\n",
            lx + 8, ly, lx + 32, ly, color, metric == 1 ? " stroke-dasharray=\"6,4\"" : "", lx + 38,
            ly + 4, metric == 0 ? "time" : "energy"));
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
    absl::StrAppend(&plot.body,
                    absl::StrFormat("<line x1=\"%d\" y1=\"%g\" x2=\"%d\" y2=\"%g\" stroke=\"#888\" "
                                    "stroke-dasharray=\"2,3\"/>\n",
                                    plot.left(), plot.Y(1), plot.right_edge(), plot.Y(1)));
  }
  // One line per combination of the other keys (the first 6). Points run
  // with the first key slowest: line l takes points l, l + stride, ...
  const size_t per_line = first.values.size();
  const size_t stride = points.size() / per_line;
  const size_t lines = std::min<size_t>(6, stride);
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
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
        absl::StrAppend(&plot.body,
                        absl::StrFormat("<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n",
                                        x, y, kColors[l]));
      }
      absl::StrAppend(&plot.body, absl::StrFormat("<path d=\"%s\" fill=\"none\" stroke=\"%s\" "
                                                  "stroke-width=\"2\" stroke-opacity=\"0.8\"%s/>\n",
                                                  path, kColors[l],
                                                  metric == 1 ? " stroke-dasharray=\"6,4\"" : ""));
    }
    SweepLegend(label, l, kColors[l], &plot);
  }
  plot.Axes(first.key + (plot.x_log() ? " (log scale)" : ""), "HpT vs GPU-only, projected");
  // Lines drawn over each other are said (under the title), or a reader
  // sees one line short.
  std::vector<std::string> coincide;
  for (size_t g = 1; g < grids.size(); ++g) {
    if (grids[g].values.size() > 1 && UnmovedBy(g, points, SweepRatios::kProjected)) {
      coincide.push_back(grids[g].key);
    }
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

}  // namespace hpt
