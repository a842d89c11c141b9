// The job page's cost sections: time and energy by phase and device
// against each GPU-only baseline, one step's timeline per device, and the
// ReRAM chip.
#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cost_phase.h"
#include "common/device_kind.h"
#include "common/gpu_baseline.h"
#include "pages/sections.h"
#include "pages/svg.h"

namespace hpt {
namespace {

struct Segment {
  std::string label;
  double value = 0;
  std::string colour;
};

struct Bar {
  std::string id;     // data-bar
  std::string label;
  std::vector<Segment> segments;
  std::string note;   // right of the bar
};

// Horizontal bars on one linear axis, each stacked from its segments; each
// rect carries its value, each bar its total (data-value, data-total).
std::string BarChart(const std::string& id, const std::string& axis_label, const std::vector<Bar>& bars,
                     const std::function<std::string(double)>& format) {
  double most = 0;
  for (const Bar& b : bars) {
    double total = 0;
    for (const Segment& s : b.segments) total += s.value;
    most = std::max(most, total);
  }
  const int row = 34;
  PlotArea plot(880, 40 + row * int(bars.size()) + 24, 190, 250, 8, 40);
  plot.SetX(0, most > 0 ? most * 1.02 : 1);
  plot.SetY(0, 1);
  std::string& g = plot.body;
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = plot.top() + 10 + row * int(i);
    double at = 0;
    absl::StrAppend(&g, "<g class=\"bar\" data-bar=\"", b.id, "\" data-total=\"");
    double total = 0;
    for (const Segment& s : b.segments) total += s.value;
    absl::StrAppend(&g, absl::StrFormat("%.17g", total), "\">",
                    absl::StrFormat("<text class=\"bar-label\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>",
                                    plot.left() - 8, y + 16, Escape(b.label)));
    for (const Segment& s : b.segments) {
      const double x0 = plot.X(at), x1 = plot.X(at + s.value);
      absl::StrAppend(&g, absl::StrFormat(
          "<rect class=\"segment\" data-label=\"%s\" data-value=\"%.17g\" x=\"%.2f\" y=\"%d\" "
          "width=\"%.2f\" height=\"22\" fill=\"%s\"><title>%s: %s</title></rect>",
          Escape(s.label), s.value, x0, y, std::max(0.0, x1 - x0), s.colour,
          Escape(b.label + ", " + s.label), format(s.value)));
      at += s.value;
    }
    absl::StrAppend(&g, absl::StrFormat("<text class=\"bar-note\" x=\"%.1f\" y=\"%d\">%s</text></g>",
                                        plot.X(at) + 6, y + 16, Escape(b.note)));
  }
  plot.Axes(axis_label, "", /*y_ticks=*/false);
  return plot.Svg(id, "aria-label=\"" + Escape(axis_label) + "\"");
}

// "reram · lora.3.reram" for "127.0.0.1:41231/lora.3.reram": the kind and
// the segment, the worker's address in the hover text.
std::string TrackLabel(const std::string& track, const StepTimeline& t) {
  std::string kind;
  for (const LaidTask& task : t.tasks) {
    if (task.track == track) kind = KindName(task.kind);
  }
  const size_t slash = track.find('/');
  return slash == std::string::npos ? kind + " · " + track : kind + " · " + track.substr(slash + 1);
}

std::vector<Bar> CostBars(const Job& job, bool energy) {
  const CostComparison& c = job.hpt().comparison();
  std::vector<Bar> bars;
  Bar phases{"hpt-phases", "HpT, by phase", {}, ""};
  std::map<std::string, double> by_kind;
  for (const PhaseCost& p : job.hpt().phases()) {
    phases.segments.push_back({CostPhaseName(p.phase()), energy ? p.energy_j() : p.simulated_s(),
                               PhaseColour(p.phase())});
    for (const auto& [kind, v] : energy ? p.device_energy_j() : p.device_busy_s()) by_kind[kind] += v;
  }
  const double hpt_total = energy ? c.hpt_energy_j() : c.hpt_time_s();
  phases.note = energy ? Joules(hpt_total) : Seconds(hpt_total);
  bars.push_back(phases);
  Bar devices{"hpt-devices", energy ? "HpT, by device" : "HpT, busy time by device", {}, ""};
  double device_total = 0;
  for (const auto& [kind, v] : by_kind) {
    devices.segments.push_back({kind, v, KindColour(kind)});
    device_total += v;
  }
  devices.note = energy ? Joules(device_total) : Seconds(device_total) + " (devices overlap)";
  bars.push_back(devices);
  for (const BaselineComparison& b : c.baselines()) {
    // Measured rows without the figure (not run; energy not measured) are
    // in the table below the charts.
    if (!b.not_run().empty() || (energy && !(b.gpu_only_energy_j() > 0))) continue;
    const std::string name = b.measured() ? b.baseline() + " measured" : b.baseline();
    const double gpu = energy ? b.gpu_only_energy_j() : b.gpu_only_time_s();
    const double ratio = energy ? b.energy_ratio() : b.time_ratio();
    const double projected = energy ? b.projected_energy_ratio() : b.projected_time_ratio();
    // A CPU's wall time stands in for a GPU it is not: never "GPU-only".
    const bool on_cpu = b.measured() && !b.measured_on_gpu();
    const std::string label =
        on_cpu ? b.baseline() + " measured on a CPU"
               : "GPU-only, " + name +
                     (!b.measured() && b.baseline() == GpuBaselineName(c.baseline()) ? " (job's)"
                                                                                     : "");
    bars.push_back({"gpu-only-" + (b.measured() ? b.baseline() + "-measured" : b.baseline()),
                    label,
                    {{on_cpu ? "CPU wall time" : "gpu-only " + name, gpu,
                      KindColour(b.measured() ? "gpu-measured" : "gpu-only")}},
                    absl::StrCat(energy ? Joules(gpu) : Seconds(gpu), ": HpT ", Num(ratio, 3),
                                 "×, projected ", Num(projected, 3), "×")});
  }
  return bars;
}

// The baselines timed on a worker's device, with what ran and where.
std::string MeasuredTable(const CostComparison& c) {
  std::string rows;
  for (const BaselineComparison& b : c.baselines()) {
    if (!b.measured()) continue;
    if (!b.not_run().empty()) {
      absl::StrAppend(&rows, "<tr><td>", Escape(b.baseline()), "</td><td colspan=\"4\">",
                      Escape(b.not_run()), "</td><td>", Escape(b.source()), "</td><td>",
                      Escape(b.measured_on()), "</td></tr>");
      continue;
    }
    const auto ratio = [](double r) { return r > 0 ? Num(r, 3) + "×" : std::string("not measured"); };
    absl::StrAppend(&rows, "<tr><td>", Escape(b.baseline()), "</td><td>", Seconds(b.step_s()),
                    "</td><td>", Seconds(b.gpu_only_time_s()), "</td><td>", ratio(b.time_ratio()),
                    "</td><td>", ratio(b.energy_ratio()), "</td><td>", Escape(b.source()),
                    "</td><td>", Escape(b.measured_on()), "</td></tr>");
  }
  if (rows.empty()) {
    return "<p class=\"note\">No GPU-only baseline measured yet: run <code>hptctl probe JOB</code> "
           "(or submit with <code>hpt.probe_steps</code>) to time each on a GPU worker.</p>";
  }
  return absl::StrCat("<h3>GPU-only, measured</h3><p class=\"note\">The GPU side timed on a worker's "
                      "device; HpT's devices stay modelled. HpT time and energy: GPU-only over HpT "
                      "(above 1: HpT saves).</p><table id=\"measured-baselines\"><thead><tr>"
                      "<th>baseline</th><th>full step</th><th>GPU-only</th><th>HpT time</th>"
                      "<th>HpT energy</th><th>what ran</th><th>measured on</th></tr></thead><tbody>",
                      rows, "</tbody></table>");
}

}  // namespace

std::string CostSection(const Job& job) {
  std::string out = "<section id=\"costs\"><h2>Time and energy (simulated)</h2>";
  if (job.hpt().phases_size() == 0) {
    return out + "<p class=\"note\">No step has been costed yet.</p></section>";
  }
  const CostComparison& c = job.hpt().comparison();
  absl::StrAppend(
      &out,
      "<p class=\"note\">HpT as run against the same steps on GPUs alone, under each GPU-only "
      "baseline (ratios above 1: HpT saves). The job's own comparison uses the <b>",
      Escape(GpuBaselineName(c.baseline())), "</b> baseline; projected ratios extend the run to ",
      Num(c.project_epochs(), 3), " epochs.</p>");
  absl::StrAppend(&out, "<h3>Time</h3>", BarChart("time-bars", "simulated seconds", CostBars(job, false), Seconds));
  absl::StrAppend(&out, "<h3>Energy</h3>", BarChart("energy-bars", "joules", CostBars(job, true), Joules));
  std::vector<std::pair<std::string, std::string>> legend;
  for (const PhaseCost& p : job.hpt().phases()) {
    const std::string& name = CostPhaseName(p.phase());
    legend.emplace_back("phase-" + name, name + " phase");
  }
  for (DeviceKind::Name kind : kDeviceKinds) legend.emplace_back(KindName(kind), KindName(kind));
  legend.emplace_back("interconnect", "interconnect");
  legend.emplace_back("gpu-only", "GPU-only baseline, modelled");
  legend.emplace_back("gpu-measured", "GPU-only baseline, measured");
  return out + Legend(legend) + MeasuredTable(c) + "</section>";
}

std::string TimelineSection(const JobPageInput& input) {
  std::string out = "<section id=\"timeline\"><h2>One step on the devices</h2>";
  if (!input.timeline.has_value()) {
    return out + "<p class=\"note\">" + Escape(input.timeline_note.empty() ? "No step recorded yet." : input.timeline_note) +
           "</p></section>";
  }
  const StepTimeline& t = *input.timeline;
  std::vector<std::string> tracks;
  for (const LaidTask& task : t.tasks) {
    if (std::find(tracks.begin(), tracks.end(), task.track) == tracks.end()) tracks.push_back(task.track);
  }
  const int row = 26;
  PlotArea plot(880, 20 + row * int(tracks.size()) + 44, 200, 20, 8, 40);
  plot.SetX(0, t.makespan_s > 0 ? t.makespan_s * 1e6 : 1);
  plot.SetY(0, 1);
  for (size_t i = 0; i < tracks.size(); ++i) {
    absl::StrAppend(&plot.body, absl::StrFormat(
        "<text class=\"bar-label\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", plot.left() - 8,
        plot.top() + 10 + row * int(i) + 15, Escape(TrackLabel(tracks[i], t))));
  }
  for (const LaidTask& task : t.tasks) {
    const size_t i = size_t(std::find(tracks.begin(), tracks.end(), task.track) - tracks.begin());
    const double x0 = plot.X(task.start_s * 1e6), x1 = plot.X(task.finish_s * 1e6);
    absl::StrAppend(
        &plot.body,
        absl::StrFormat(
            "<rect class=\"task\" data-kind=\"%s\" data-start=\"%.9g\" data-finish=\"%.9g\" "
            "x=\"%.2f\" "
            "y=\"%d\" width=\"%.2f\" height=\"18\" fill=\"%s\"%s><title>%s %s (%s) on %s: %s, %s, "
            "from %s</title></rect>",
            KindName(task.kind), task.start_s, task.finish_s, x0, plot.top() + 10 + row * int(i),
            std::max(0.5, x1 - x0), KindColour(KindName(task.kind)),
            task.chain == "trial" ? " opacity=\"0.6\"" : "", Escape(task.type), Escape(task.chain),
            Escape(KindName(task.kind)), Escape(task.track), Seconds(task.finish_s - task.start_s),
            Joules(task.cost.energy_j()), Seconds(task.start_s)));
  }
  plot.Axes("simulated µs from the step's start", "", /*y_ticks=*/false);
  absl::StrAppend(
      &out, "<p class=\"note\">Step ", t.step, " (", CostPhaseName(t.phase),
      " phase): ", t.tasks.size(), " tasks, makespan ", Seconds(t.makespan_s), ", ",
      Joules(t.energy_j),
      ". <code>hptctl trace JOB --format=chrome</code> gives the same as a Chrome trace.</p>");
  absl::StrAppend(&out, plot.Svg("gantt", absl::StrFormat("data-step=\"%d\" data-tasks=\"%d\" data-makespan=\"%.9g\" "
                                                          "aria-label=\"one step per device\"",
                                                          t.step, t.tasks.size(), t.makespan_s)));
  std::vector<std::pair<std::string, std::string>> legend;
  for (DeviceKind::Name kind : kDeviceKinds) legend.emplace_back(KindName(kind), KindName(kind));
  return out + Legend(legend) + "</section>";
}

std::string ChipSection(const Job& job) {
  const HptStatus& h = job.hpt();
  std::string out = "<section id=\"chip\"><h2>The ReRAM chip</h2>";
  if (h.reram_layers_size() == 0) {
    return out + "<p class=\"note\">No layer is on ReRAM (the job has not switched, or its placement keeps the "
                 "LoRA phase off ReRAM).</p></section>";
  }
  int64_t tiles = 0;
  for (const ReramLayerPlacement& r : h.reram_layers()) tiles += r.tiles();
  // One square per tile, coloured by layer, in rows of 32.
  const int per_row = 32, cell = 14;
  const int rows = int((tiles + per_row - 1) / per_row);
  std::string squares;
  int64_t at = 0;
  int layer_index = 0;
  for (const ReramLayerPlacement& r : h.reram_layers()) {
    const std::string colour = absl::StrFormat("hsl(%d 55%% 55%%)", (layer_index++ * 47) % 360);
    for (int64_t k = 0; k < r.tiles(); ++k, ++at) {
      absl::StrAppend(&squares, absl::StrFormat(
          "<rect class=\"tile\" data-layer=\"%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
          "<title>%s (%dx%d, %d copies, worker %d)</title></rect>",
          Escape(r.layer()), int(at % per_row) * cell, int(at / per_row) * cell, cell - 2, cell - 2, colour,
          Escape(r.layer()), r.in_features(), r.out_features(), r.duplication(), r.worker()));
    }
  }
  absl::StrAppend(&out, absl::StrFormat("<svg id=\"chip-tiles\" class=\"plot\" data-tiles=\"%d\" viewBox=\"0 0 %d %d\" "
                                        "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"chip tiles\">%s</svg>",
                                        tiles, per_row * cell, rows * cell, per_row * cell, rows * cell, squares));
  absl::StrAppend(&out, "<table><thead><tr><th>layer</th><th>in × out</th><th>copies</th><th>tiles</th>"
                        "<th>worker</th></tr></thead><tbody>");
  for (const ReramLayerPlacement& r : h.reram_layers()) {
    absl::StrAppend(&out, "<tr><td>", Escape(r.layer()), "</td><td>", r.in_features(), " × ", r.out_features(),
                    "</td><td>", r.duplication(), "</td><td>", r.tiles(), "</td><td>", r.worker(), "</td></tr>");
  }
  absl::StrAppend(&out, "</tbody></table>");
  for (const DeviceCost& d : job.device_costs()) {
    if (d.kind() != DeviceKind::reram) continue;
    const auto& counters = d.cost().counters();
    auto get = [&](const char* name) { return counters.count(name) ? counters.at(name) : 0.0; };
    absl::StrAppend(&out, "<p class=\"wear\" data-max-cell-writes=\"", absl::StrFormat("%.0f", get("max_cell_writes")),
                    "\">ReRAM worker ", Escape(d.worker()), ": ", absl::StrFormat("%.0f", get("cell_writes")),
                    " cell writes; the most-written cell was written ", absl::StrFormat("%.0f", get("max_cell_writes")),
                    " time", get("max_cell_writes") == 1 ? "" : "s",
                    counters.count("worst_wear") ? absl::StrCat(", ", absl::StrFormat("%.2g", 100 * get("worst_wear")),
                                                                " % of its endurance")
                                                 : std::string(),
                    ".</p>");
  }
  return out + "</section>";
}

}  // namespace hpt
