// The job page's training sections: loss per step with the phase
// controller's decisions, the decisions as a table, and predictions
// against truth.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cost/text_report.h"
#include "data/timestamps.h"
#include "pages/sections.h"
#include "pages/svg.h"

namespace hpt {
namespace {

// Checks drawn one by one (with hover text), and table rows, at most.
constexpr int kMaxMarks = 400;
constexpr int kMaxRows = 300;

std::string EventKind(PhaseEvent::Kind kind) {
  switch (kind) {
    case PhaseEvent::CHECK: return "check";
    case PhaseEvent::TRIAL_START: return "trial start";
    case PhaseEvent::TRIAL_END: return "trial end (t-test)";
    case PhaseEvent::SWITCH: return "switch";
    default: return "event";
  }
}

std::string Triple(const google::protobuf::RepeatedField<double>& v) {
  std::vector<std::string> parts;
  for (double x : v) parts.push_back(Num(x, 4));
  return absl::StrJoin(parts, ", ");
}

// What a check saw, for its hover text and its table row.
std::string EventText(const PhaseEvent& e) {
  std::string text = absl::StrCat(EventKind(e.kind()), " at step ", e.iteration());
  if (e.kind() == PhaseEvent::CHECK) {
    absl::StrAppend(&text, ": loss test ", e.loss_passed() ? "passed" : "failed", " (L = ",
                    Triple(e.window_losses()), "), weight test ",
                    e.weight_passed() ? "passed" : "failed", " (d = ", Triple(e.weight_distances()),
                    ")");
  }
  if (e.kind() == PhaseEvent::TRIAL_END) {
    absl::StrAppend(&text, ": t = ", Num(e.t(), 4), ", p = ", Num(e.p(), 4),
                    TrialVerdict(e).empty() ? "" : " (" + TrialVerdict(e) + ")");
    if (!e.trial_detail().empty()) absl::StrAppend(&text, "; ", e.trial_detail());
  }
  if (!e.reason().empty()) absl::StrAppend(&text, ". ", e.reason());
  return text;
}

// The plot's axes: every step across, the losses up (log scale where they
// span more than tenfold).
PlotArea LossPlotArea(const JobHistory& h, bool* log) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto see = [&](double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  };
  for (int i = 0; i < h.first_step_size(); ++i) see(h.loss_min(i)), see(h.loss_max(i));
  for (const EpochPoint& e : h.epochs()) {
    see(e.train_loss());
    if (e.test_loss() > 0) see(e.test_loss());
    if (e.validation_loss() > 0) see(e.validation_loss());
  }
  *log = lo > 0 && hi / lo > 10;
  PlotArea plot(880, 300);
  plot.SetX(0, double(std::max<int64_t>(1, h.steps() - 1)));
  plot.SetXWhole();
  plot.SetY(*log ? lo / 1.2 : std::min(0.0, lo), *log ? hi * 1.2 : hi * 1.05, *log);
  return plot;
}

// Trial windows, shaded under everything else; returns how many.
int DrawTrials(const HptStatus& hpt, PlotArea* plot) {
  int64_t trial_start = -1;
  int trials = 0;
  for (const PhaseEvent& e : hpt.events()) {
    if (e.kind() == PhaseEvent::TRIAL_START) trial_start = e.iteration();
    if (e.kind() == PhaseEvent::TRIAL_END && trial_start >= 0) {
      absl::StrAppend(&plot->body, absl::StrFormat(
          "<rect class=\"trial\" data-from=\"%d\" data-to=\"%d\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
          "height=\"%d\"><title>trial window, steps %d to %d: %s</title></rect>",
          trial_start, e.iteration(), plot->X(double(trial_start)), plot->top(),
          std::max(1.0, plot->X(double(e.iteration())) - plot->X(double(trial_start))),
          plot->bottom_edge() - plot->top(), trial_start, e.iteration(), Escape(EventText(e))));
      trial_start = -1;
      ++trials;
    }
  }
  return trials;
}

// The training loss: each point's mean, and the band of its least and
// largest step where points hold several steps. Over 40 points, where a
// small batch's losses scatter around their trend, a darker line draws
// the trend: each point's mean of the twentieth of the points around it.
struct TrainLossDrawn {
  size_t points = 0;
  int64_t trend_steps = 0;  // steps each trend point averages; 0: no trend line
};
TrainLossDrawn DrawTrainLoss(const JobHistory& h, PlotArea* plot) {
  const double half = double(h.bucket() - 1) / 2;
  std::vector<std::pair<double, double>> upper, lower, mean;
  for (int i = 0; i < h.first_step_size(); ++i) {
    const double x = plot->X(double(h.first_step(i)) + half);
    upper.emplace_back(x, plot->Y(h.loss_max(i)));
    lower.emplace_back(x, plot->Y(h.loss_min(i)));
    mean.emplace_back(x, plot->Y(h.loss_mean(i)));
  }
  if (h.bucket() > 1) {
    std::reverse(lower.begin(), lower.end());
    upper.insert(upper.end(), lower.begin(), lower.end());
    absl::StrAppend(&plot->body, "<polygon class=\"band\" points=\"", Points(upper), "\"/>");
  }
  TrainLossDrawn drawn{mean.size(), 0};
  const int n = h.first_step_size();
  const int reach = n / 40;  // points either side: a window of about n / 20
  absl::StrAppend(&plot->body, "<polyline class=\"series train", reach > 0 ? " faint" : "",
                  "\" data-series=\"train-loss\" data-count=\"", mean.size(), "\" points=\"",
                  Points(mean), "\"/>");
  if (reach == 0) return drawn;
  std::vector<double> sum(n + 1, 0.0);  // prefix sums of the finite means
  std::vector<int> count(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    const bool finite = std::isfinite(h.loss_mean(i));
    sum[i + 1] = sum[i] + (finite ? h.loss_mean(i) : 0.0);
    count[i + 1] = count[i] + finite;
  }
  std::vector<std::pair<double, double>> trend;
  for (int i = 0; i < n; ++i) {
    const int from = std::max(0, i - reach), to = std::min(n, i + reach + 1);
    if (count[to] == count[from]) continue;
    trend.emplace_back(mean[i].first,
                       plot->Y((sum[to] - sum[from]) / double(count[to] - count[from])));
  }
  drawn.trend_steps = int64_t(2 * reach + 1) * h.bucket();
  absl::StrAppend(&plot->body, "<polyline class=\"series trend\" data-series=\"train-trend\" ",
                  "data-steps=\"", drawn.trend_steps, "\" points=\"", Points(trend), "\"/>");
  return drawn;
}

// Every check as a mark with its hover text; past kMaxMarks checks (a job
// that never switches, with a short window) as two paths without hover
// text, so the page stays small. Counts the checks and those that passed.
void DrawChecks(const HptStatus& hpt, PlotArea* plot, int* checks, int* passed) {
  *checks = *passed = 0;
  for (const PhaseEvent& e : hpt.events()) *checks += e.kind() == PhaseEvent::CHECK;
  const bool one_path = *checks > kMaxMarks;
  std::string pass_path, fail_path;
  for (const PhaseEvent& e : hpt.events()) {
    if (e.kind() != PhaseEvent::CHECK) continue;
    const bool ok = e.loss_passed() && e.weight_passed();
    *passed += ok;
    const double x = plot->X(double(e.iteration()));
    if (one_path) {
      absl::StrAppend(ok ? &pass_path : &fail_path,
                      absl::StrFormat("M%.1f %dV%d", x, plot->top(), plot->bottom_edge()));
      continue;
    }
    absl::StrAppend(&plot->body, absl::StrFormat(
        "<g class=\"check %s\" data-step=\"%d\" data-passed=\"%d\"><line x1=\"%.1f\" x2=\"%.1f\" "
        "y1=\"%d\" y2=\"%d\"/><circle cx=\"%.1f\" cy=\"%d\" r=\"4\"/><title>%s</title></g>",
        ok ? "pass" : "fail", e.iteration(), ok, x, x, plot->top(), plot->bottom_edge(), x,
        plot->top() + 5, Escape(EventText(e))));
  }
  if (one_path) {
    absl::StrAppend(&plot->body, "<g class=\"check pass\" data-count=\"", *passed,
                    "\"><path d=\"", pass_path, "\"/></g><g class=\"check fail\" data-count=\"",
                    *checks - *passed, "\"><path d=\"", fail_path, "\"/></g>");
  }
}

// The test loss after each epoch, and the switch.
void DrawTestLossAndSwitch(const JobHistory& h, const HptStatus& hpt, PlotArea* plot) {
  std::vector<std::string> test_points;
  for (const EpochPoint& e : h.epochs()) {
    if (e.test_loss() <= 0) continue;
    test_points.push_back(absl::StrFormat(
        "<circle class=\"test\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>epoch %d: test loss %s, "
        "train loss %s</title></circle>",
        plot->X(double(e.last_step())), plot->Y(e.test_loss()), e.epoch(), Num(e.test_loss()),
        Num(e.train_loss())));
  }
  absl::StrAppend(&plot->body, "<g class=\"series\" data-series=\"test-loss\" data-count=\"",
                  test_points.size(), "\">", absl::StrJoin(test_points, ""), "</g>");
  // The validation split's loss (training.select, data.validation_share).
  std::vector<std::string> validation_points;
  for (const EpochPoint& e : h.epochs()) {
    if (e.validation_loss() <= 0) continue;
    const double x = plot->X(double(e.last_step())), y = plot->Y(e.validation_loss());
    validation_points.push_back(absl::StrFormat(
        "<rect class=\"validation\" x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\"><title>"
        "epoch %d: validation loss %s</title></rect>",
        x - 3.5, y - 3.5, e.epoch(), Num(e.validation_loss())));
  }
  if (!validation_points.empty()) {
    absl::StrAppend(&plot->body,
                    "<g class=\"series\" data-series=\"validation-loss\" data-count=\"",
                    validation_points.size(), "\">", absl::StrJoin(validation_points, ""), "</g>");
  }
  if (hpt.switch_step() < 0) return;
  const double x = plot->X(double(hpt.switch_step()));
  absl::StrAppend(&plot->body, absl::StrFormat(
      "<g class=\"switch\" data-step=\"%d\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
      "<text x=\"%.1f\" y=\"%d\">switch → LoRA at step %d</text><title>first LoRA-phase step: "
      "%d</title></g>",
      hpt.switch_step(), x, x, plot->top(), plot->bottom_edge(), x + 4, plot->top() + 24,
      hpt.switch_step(), hpt.switch_step()));
}

}  // namespace

std::string LossSection(const Job& job, const JobHistory& h) {
  std::string out = "<section id=\"loss\"><h2>Training loss</h2>";
  if (h.first_step_size() == 0) return out + "<p class=\"note\">No step has finished yet.</p></section>";
  const HptStatus& hpt = job.hpt();
  bool log = false;
  PlotArea plot = LossPlotArea(h, &log);
  const int trials = DrawTrials(hpt, &plot);
  const TrainLossDrawn drawn = DrawTrainLoss(h, &plot);
  const size_t points = drawn.points;
  int checks = 0, passed = 0;
  DrawChecks(hpt, &plot, &checks, &passed);
  DrawTestLossAndSwitch(h, hpt, &plot);
  plot.Axes("step", log ? "loss (MSE, log scale)" : "loss (MSE)");
  absl::StrAppend(&out, plot.Svg("loss-plot", absl::StrFormat(
      "data-steps=\"%d\" data-bucket=\"%d\" data-points=\"%d\" data-switch-step=\"%d\" "
      "data-checks=\"%d\" data-trials=\"%d\" aria-label=\"training loss per step\"",
      h.steps(), h.bucket(), points, hpt.switch_step(), checks, trials)));
  std::vector<std::pair<std::string, std::string>> legend = {{"train", "training loss"}};
  if (drawn.trend_steps > 0) {
    legend.push_back(
        {"trend", absl::StrCat("its trend: the mean of the ", drawn.trend_steps, " steps around")});
  }
  if (h.bucket() > 1) legend.push_back({"band", "least to largest in a point's steps"});
  legend.push_back({"test", "test loss after an epoch"});
  for (const EpochPoint& e : h.epochs()) {
    if (e.validation_loss() <= 0) continue;
    legend.push_back({"validation", "validation loss after an epoch"});
    break;
  }
  for (const auto& entry : std::vector<std::pair<std::string, std::string>>{
           {"pass", "check: both tests passed"},
           {"fail", "check: a test failed"},
           {"trial", "trial window"},
           {"switch", "switch"}}) {
    legend.push_back(entry);
  }
  absl::StrAppend(&out, Legend(legend));
  absl::StrAppend(&out, "<p class=\"note\">", h.steps(), " steps",
                  h.bucket() > 1 ? absl::StrCat("; each point is the mean of ", h.bucket(),
                                                " steps, the band their least and largest loss")
                                 : "; every step is a point",
                  drawn.trend_steps > 0
                      ? absl::StrCat(", the dark line their trend (each the mean of the ",
                                     drawn.trend_steps, " steps around it)")
                      : "",
                  ". ", checks, " checks (", passed, " passed both tests), ", trials,
                  " trial window", trials == 1 ? "" : "s", ". Hover a mark for what it saw.</p>");
  return out + ChecksTable(hpt) + "</section>";
}

std::string ChecksTable(const HptStatus& hpt) {
  if (hpt.events_size() == 0) return "";
  const int first = std::max(0, hpt.events_size() - kMaxRows);
  std::string out = absl::StrCat(
      "<details id=\"checks\"><summary>Phase-controller decisions",
      first > 0 ? absl::StrCat(" (the last ", kMaxRows, " of ", hpt.events_size(),
                               "; all are in hptctl report JOB --format=json)")
                : "",
      "</summary><table><thead><tr>"
      "<th>step</th><th>what</th><th>window losses L0, L1, L2</th><th>weight distances d0, d1, "
      "d2</th><th>loss test (margin)</th><th>weight test (margin)</th><th>t</th><th>p</th><th>why</th></tr>"
      "</thead><tbody>");
  for (int i = first; i < hpt.events_size(); ++i) {
    const PhaseEvent& e = hpt.events(i);
    const bool check = e.kind() == PhaseEvent::CHECK, trial_end = e.kind() == PhaseEvent::TRIAL_END;
    // A test's cell: its verdict, its margin (statistic over bound), and
    // what decided it on hover.
    auto test = [check](bool passed, double margin, const std::string& detail) -> std::string {
      if (!check) return "<td></td>";
      return absl::StrCat("<td title=\"", Escape(detail), "\">", passed ? "pass" : "fail",
                          detail.empty() ? "" : " (" + Num(margin, 3) + ")", "</td>");
    };
    absl::StrAppend(&out, "<tr><td>", e.iteration(), "</td><td>", EventKind(e.kind()), "</td><td>",
                    Triple(e.window_losses()), "</td><td>", Triple(e.weight_distances()), "</td>",
                    test(e.loss_passed(), e.loss_margin(), e.loss_detail()),
                    test(e.weight_passed(), e.weight_margin(), e.weight_detail()), "<td>",
                    trial_end ? Num(e.t()) : "", "</td><td>", trial_end ? Num(e.p()) : "", "</td><td>",
                    Escape(trial_end && e.reason().empty() ? e.trial_detail() : e.reason()),
                    "</td></tr>");
  }
  return out + "</tbody></table></details>";
}

// Four ticks over the shown samples (none at the right edge, where a label
// would be cut), labelled with their target times: dates where the rows
// are a day or more apart, else month, day and time.
std::vector<std::pair<double, std::string>> TimeTicks(const TestPredictions& p) {
  const int64_t n = p.times_size();
  const bool dates = n > 1 && p.times(1) - p.times(0) >= 86400;
  std::vector<std::pair<double, std::string>> ticks;
  for (int k = 0; k < 4 && n > 0; ++k) {
    const int64_t s = (n - 1) * k / 4;
    const std::string at = FormatTimestamp(p.times(int(s)), dates);
    ticks.emplace_back(double(s), dates ? at : at.substr(5));
  }
  return ticks;
}

std::string PredictionsSection(const Job& job, const JobHistory& history) {
  const TestPredictions& p = history.predictions();
  std::string out = "<section id=\"predictions\"><h2>Predictions against truth (test split)</h2>";
  if (p.samples() == 0 || p.tokens_size() == 0) {
    return out + "<p class=\"note\">No evaluation has run yet.</p></section>";
  }
  absl::StrAppend(&out, "<p class=\"note\">After epoch ", p.epoch(), ": the first ", p.samples(),
                  " test samples of ", p.tokens_size(),
                  " stations, in the data's own units.</p><div class=\"small-multiples\">");
  const int64_t n = p.samples();
  for (int t = 0; t < p.tokens_size(); ++t) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int64_t s = 0; s < n; ++s) {
      for (float v : {p.truth(int(t * n + s)), p.predicted(int(t * n + s))}) {
        lo = std::min(lo, double(v));
        hi = std::max(hi, double(v));
      }
    }
    PlotArea plot(430, 190, 56, 10, 10, 36);
    plot.SetX(0, double(std::max<int64_t>(1, n - 1)));
    plot.SetXWhole();
    const double pad = (hi - lo) * 0.05 + 1e-9;
    plot.SetY(lo - pad, hi + pad);
    std::vector<std::pair<double, double>> truth, predicted;
    for (int64_t s = 0; s < n; ++s) {
      truth.emplace_back(plot.X(double(s)), plot.Y(p.truth(int(t * n + s))));
      predicted.emplace_back(plot.X(double(s)), plot.Y(p.predicted(int(t * n + s))));
    }
    absl::StrAppend(&plot.body, "<polyline class=\"series truth\" data-series=\"truth\" data-count=\"",
                    n, "\" points=\"", Points(truth), "\"/><polyline class=\"series predicted\" "
                    "data-series=\"predicted\" data-count=\"", n, "\" points=\"", Points(predicted), "\"/>");
    const DataSummary& d = job.data();
    const int64_t token = p.tokens(t);
    const std::string station = token < d.stations_size() && !d.stations(int(token)).empty()
                                    ? d.stations(int(token))
                                    : absl::StrCat("station ", token);
    const bool timed = p.times_size() == n;
    if (timed) plot.SetXTicks(TimeTicks(p));
    plot.Axes(absl::StrCat(timed ? "time (UTC): " : "test sample: ", station),
              d.unit().empty() ? "value (the data's units)" : d.unit());
    absl::StrAppend(&out, plot.Svg(absl::StrCat("prediction-", p.tokens(t)),
                                   "data-plot=\"prediction\" aria-label=\"predictions against truth\""));
  }
  return out + "</div>" + Legend({{"truth", "truth"}, {"predicted", "predicted"}}) + "</section>";
}

}  // namespace hpt
