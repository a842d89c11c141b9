#include "pages/job_page.h"

#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/device_kind.h"
#include "common/gpu_baseline.h"
#include "common/training_phase.h"
#include "cost/switch_diagnosis.h"
#include "cost/text_report.h"
#include "models/model_shape.h"
#include "pages/sections.h"
#include "pages/svg.h"

namespace hpt {
namespace {

// One stylesheet for every page: system fonts, no network.
constexpr char kStyle[] = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:940px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde1e7;padding-bottom:4px}
h3{font-size:14px;margin:14px 0 4px;color:#4a5363}
a{color:#2f5fa7}.note{color:#4a5363;margin:4px 0 8px;overflow-wrap:anywhere}.state{display:inline-block;padding:1px 8px;border-radius:10px;background:#e4e8ee;font-size:12px}
.state.SUCCEEDED{background:#d9f0dd}.state.FAILED{background:#f7d9d9}.state.RUNNING{background:#dbe8fb}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}.card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:8px 12px;min-width:150px}
h3.cards-title{margin:14px 0 -4px;font-size:13px;color:#4a5363;font-weight:600}
.card b{display:block;font-size:20px}.card span{color:#4a5363;font-size:12px}
.card.loses{border-color:#b3261e}.card.loses b,.card.loses span{color:#b3261e}td.loses{color:#b3261e;font-weight:600}
svg.plot{background:#fff;border:1px solid #dde1e7;border-radius:4px;max-width:100%;height:auto;display:block;margin:6px 0}
.grid{stroke:#eceff3}.axis,.tick-mark{stroke:#8a93a3}.tick,.bar-note{font-size:11px;fill:#4a5363}.label{font-size:12px;fill:#1d2330}
.bar-label{font-size:12px;fill:#1d2330}
polyline.series{fill:none;stroke-width:1.6}.train{stroke:#2f5fa7}.train.faint{opacity:.4}.trend{stroke:#16335f;stroke-width:2.4}.band{fill:#2f5fa7;opacity:.16}
circle.test{fill:#e15759;stroke:#fff}rect.validation{fill:#f28e2b;stroke:#fff}.check line{stroke-width:1;stroke-dasharray:3 3}.check.pass line{stroke:#2e9d4f}.check.fail line{stroke:#b9bfca}
.check path{stroke-width:1}.check.pass path{stroke:#2e9d4f}.check.fail path{stroke:#b9bfca}
.check.pass circle{fill:#2e9d4f}.check.fail circle{fill:#b9bfca}.trial{fill:#76b7b2;opacity:.22}
.switch line{stroke:#e15759;stroke-width:2.5}.switch text{font-size:12px;fill:#e15759;font-weight:600}
.truth{stroke:#1d2330}.predicted{stroke:#f28e2b;stroke-dasharray:4 2}
.small-multiples{display:flex;flex-wrap:wrap;gap:8px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:#4a5363;margin:4px 0}.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px;border-radius:2px}
table{border-collapse:collapse;background:#fff;font-size:12px;margin:6px 0}td,th{border:1px solid #dde1e7;padding:3px 6px;text-align:left}th{background:#eef1f5}
pre{background:#fff;border:1px solid #dde1e7;padding:10px;overflow-x:auto;font-size:12px}pre.note{white-space:pre-wrap}
details{margin:8px 0}summary{cursor:pointer;color:#2f5fa7}
)";

std::string Card(const std::string& value, const std::string& label,
                 const std::string& extra_class = "") {
  return absl::StrCat("<div class=\"card", extra_class.empty() ? "" : " " + extra_class, "\"><b>",
                      Escape(value), "</b><span>", Escape(label), "</span></div>");
}

// HpT's time or energy ratio against a GPU-only way (`against`): saved
// where it is 1 or more, else in red, saying that HpT is the slower one
// or the one that uses more.
std::string RatioCard(double ratio, bool time, const std::string& against) {
  if (!(ratio > 0)) {
    return Card("–", absl::StrCat(time ? "time" : "energy", " vs ", against, ": not known yet"));
  }
  if (ratio >= 1) {
    return Card(Num(ratio, 3) + "×", absl::StrCat(time ? "time" : "energy", " saved vs ", against));
  }
  return Card(Num(ratio, 3) + "×",
              absl::StrCat(time ? "time" : "energy", " vs ", against,
                           time ? ": HpT is slower" : ": HpT uses more"),
              "loses");
}

// The model's skill over persistence, in red where it loses to it; and
// climatology's RMSE, the other reference.
std::string SkillCards(const QualityMetrics& m, const std::string& unit) {
  if (m.persistence_rmse() <= 0) return "";
  const bool loses = m.skill() < 0;
  return absl::StrCat(
      Card(Num(m.skill(), 3),
           absl::StrCat(loses ? "loses to persistence: skill" : "skill over persistence",
                        " (1 - RMSE / ", Num(m.persistence_rmse(), 4), unit, ")"),
           loses ? "loses" : ""),
      Card(Num(m.climatology_rmse(), 4) + unit, absl::StrCat("climatology RMSE (", m.climatology(), ")")));
}

// The model's quality first: the test split's error in the data's units,
// over the stations the data names.
std::string QualityCards(const Job& job) {
  const QualityMetrics& m = job.test_metrics();
  const DataSummary& d = job.data();
  const std::string unit = d.unit().empty() ? "" : " " + d.unit();
  std::string out = "<h3 class=\"cards-title\">Forecast quality (test split, the data's units)</h3>";
  if (m.values() == 0) {
    const std::string& evaluating = job.progress().evaluating();
    std::string why;
    if (!evaluating.empty()) {
      why = Escape(absl::StrCat("Evaluating ", evaluating, "."));
    } else if (!d.source().empty() && d.test_samples() == 0) {
      why = Escape(absl::StrCat("This job has no test split, so no quality to show",
                                d.split().empty() ? "." : absl::StrCat(" (", d.split(), ").")));
    } else if (JobEnded(job.state())) {
      why = "No evaluation ran: the job ended before its first epoch did.";
    } else {
      why = "No evaluation has run yet: it follows each epoch.";
    }
    return out + "<p class=\"note\" id=\"quality\">" + why + "</p>";
  }
  absl::StrAppend(&out, "<div class=\"cards\" id=\"quality\">",
                  Card(Num(m.rmse(), 4) + unit, "test RMSE"), SkillCards(m, unit),
                  Card(Num(m.mae(), 4) + unit, "test MAE"),
                  Card(Num(m.nse(), 3), "NSE (1: perfect, 0: each station's mean)"),
                  Card(Num(job.progress().test_loss(), 4), "test loss (MSE, normalised)"),
                  job.progress().selected_epoch() > 0
                      ? Card(absl::StrCat("epoch ", job.progress().selected_epoch()),
                             absl::StrCat("kept: it validated best (MSE ",
                                          Num(job.progress().selected_validation_loss(), 4), ")"))
                      : "",
                  "</div>");
  const int epoch = job.progress().selected_epoch() > 0 ? job.progress().selected_epoch()
                                                        : job.progress().epoch();
  std::string over = absl::StrCat(m.values(), " forecasts after epoch ", epoch);
  if (d.stations_size() > 0) {
    std::vector<std::string> names(d.stations().begin(), d.stations().end());
    if (names.size() > 8) {
      names.resize(8);
      names.push_back(absl::StrCat("and ", d.stations_size() - 8, " more"));
    }
    absl::StrAppend(&over, " at ", d.stations_size(), " stations: ", absl::StrJoin(names, ", "));
  }
  if (!d.first_time().empty()) {
    absl::StrAppend(&over, "; rows from ", d.first_time(), " to ", d.last_time(), " UTC (",
                    d.time_column().empty() ? "time" : d.time_column(), ")");
  }
  if (!d.split().empty()) absl::StrAppend(&over, "; ", d.split());
  return out + "<p class=\"note\">" + Escape(over) + "</p>";
}

std::string Header(const Job& job) {
  const JobProgress& p = job.progress();
  const HptStatus& h = job.hpt();
  const CostComparison& c = h.comparison();
  std::string out = absl::StrCat(
      "<h1>", Escape(job.job_id()), job.name().empty() ? "" : " · " + Escape(job.name()),
      "</h1><p><span class=\"state ", JobState_Name(job.state()), "\" id=\"state\">",
      Escape(StateName(job.state())), "</span> ", Escape(job.spec().model().preset()),
      " preset · phase <b id=\"phase\">", Escape(PhaseName(h.phase())), "</b> · epoch ", p.epoch(),
      " of ", p.epochs(), " · step ", p.step(), " of ", p.total_steps(), "</p>");
  if (job.has_model()) {  // known once the data loads
    absl::StrAppend(&out,
                    "<p class=\"note\" id=\"shape\">model: ", Escape(ModelShapeLine(job.model())),
                    "</p>");
  }
  if (!job.error().empty()) absl::StrAppend(&out, "<p class=\"note\">error: ", Escape(job.error()), "</p>");
  absl::StrAppend(&out, QualityCards(job));
  absl::StrAppend(&out, "<h3 class=\"cards-title\">The switch, and what HpT saves on hardware (simulated)</h3><div class=\"cards\">");
  absl::StrAppend(&out, Card(h.switch_step() >= 0 ? absl::StrCat("step ", h.switch_step())
                                                  : (JobEnded(job.state()) ? "never" : "not yet"),
                             "switch to LoRA"));
  if (!h.layer_switch_steps().empty()) {  // hpt.switch_rule layerwise
    std::vector<std::string> layers;
    for (int l = 0; l < h.layer_switch_steps_size(); ++l) {
      const int64_t at = h.layer_switch_steps(l);
      layers.push_back(at >= 0 ? absl::StrCat(l, " @", at) : absl::StrCat(l, " full"));
    }
    absl::StrAppend(&out, Card(absl::StrJoin(layers, " · "), "each layer's switch (layerwise)"));
  }
  // Without a switch every step trains as GPU-only training would: its
  // ratios of 1 are no saving, and say so (as hptctl status does).
  if (TrainedWithoutSwitch(job)) {
    absl::StrAppend(&out, Card("nothing", absl::StrCat("saved", NothingSavedWhy(job))));
  } else if (c.hpt_time_s() > 0) {
    absl::StrAppend(&out, RatioCard(c.time_ratio(), /*time=*/true,
                                    "GPU-only (" + GpuBaselineName(c.baseline()) + ")"));
    // The bar the paper's claim must clear: the fastest GPU-only baseline,
    // modelled; and, where this job's GPU measured them, the fastest there.
    for (bool measured : {false, true}) {
      if (const BaselineComparison* f = FastestBaseline(c, measured); f != nullptr) {
        absl::StrAppend(
            &out, RatioCard(f->time_ratio(), /*time=*/true,
                            absl::StrCat("the fastest GPU-only (", f->baseline(),
                                         measured ? ", measured on this GPU)" : ", modelled)")));
      }
    }
    // No energy ratio: the reference GPU's profile gives no board power.
    absl::StrAppend(&out, c.energy_ratio() > 0
                              ? RatioCard(c.energy_ratio(), /*time=*/false, "GPU-only")
                              : Card("–",
                                     "energy vs GPU-only: not known (the reference GPU's "
                                     "profile gives no board power)"));
    absl::StrAppend(&out, Card(Num(c.projected_time_ratio(), 3) + "× / " +
                                   RatioOrDash(c.projected_energy_ratio()),
                               absl::StrCat("projected to ", Num(c.project_epochs(), 3),
                                            c.project_epochs() == 1 ? " epoch" : " epochs")));
  }
  absl::StrAppend(&out, "</div>");
  if (const std::string switched = SwitchWhy(job); !switched.empty()) {
    absl::StrAppend(&out, "<p class=\"note\" id=\"switch-why\">Switched to LoRA ", Escape(switched),
                    ".</p>");
  }
  const std::vector<std::string> why = ClosestApproach(job);
  if (!why.empty()) {
    absl::StrAppend(&out, "<pre class=\"note\" id=\"no-switch\">");
    for (const std::string& line : why) absl::StrAppend(&out, Escape(line), "\n");
    absl::StrAppend(&out, "</pre>");
  }
  return out;
}

constexpr char kLiveScript[] = R"(<script>
(function(){
  const terminal = ["SUCCEEDED","FAILED","CANCELLED"];
  async function poll(){
    const c = document.getElementById("content");
    if (!c || terminal.includes(c.dataset.state)) return;
    try {
      const r = await fetch(location.pathname + "?part=content", {credentials: "same-origin"});
      if (r.ok) { c.outerHTML = await r.text(); }
    } catch (e) { /* the coordinator may be restarting: try again */ }
    setTimeout(poll, 2000);
  }
  setTimeout(poll, 2000);
})();
</script>)";

std::string Page(const std::string& title, const std::string& body, const PageOptions& options) {
  return absl::StrCat("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
                      "content=\"width=device-width, initial-scale=1\"><title>",
                      Escape(title), "</title><style>", kStyle, "</style></head><body><main>",
                      options.jobs_href.empty() ? "" : "<p><a href=\"" + Escape(options.jobs_href) + "\">← all jobs</a></p>",
                      body, "</main>", options.live ? kLiveScript : "", "</body></html>\n");
}

}  // namespace

std::string KindColour(const std::string& kind) {
  if (kind == KindName(DeviceKind::gpu)) return "#4e79a7";
  if (kind == KindName(DeviceKind::reram)) return "#f28e2b";
  if (kind == KindName(DeviceKind::systolic)) return "#59a14f";
  if (kind == "interconnect") return "#bab0ac";
  if (kind == "gpu-only") return "#9c755f";
  if (kind == "gpu-measured") return "#b07aa1";
  return "#8a93a3";
}

std::string PhaseColour(CostPhase::Name phase) {
  switch (phase) {
    case CostPhase::full:
      return "#4e79a7";
    case CostPhase::partial:
      return "#76b7b2";
    case CostPhase::switch_:
      return "#e15759";
    case CostPhase::lora:
      return "#59a14f";
    case CostPhase::recovery:
      return "#b07aa1";
    case CostPhase::lora_gpu:
      return "#edc948";
    default:
      return "#8a93a3";
  }
}

std::string Legend(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = "<div class=\"legend\">";
  for (const auto& [key, label] : entries) {
    std::string colour;
    CostPhase::Name phase;
    if (key.rfind("phase-", 0) == 0 && CostPhase::Name_Parse(key.substr(6), &phase)) {
      colour = PhaseColour(phase);
    } else if (key == "train") {
      colour = "#2f5fa7";
    } else if (key == "trend") {
      colour = "#16335f";
    } else if (key == "band") {
      colour = "rgba(47,95,167,.25)";
    } else if (key == "test" || key == "switch") {
      colour = "#e15759";
    } else if (key == "validation") {
      colour = "#f28e2b";
    } else if (key == "pass") {
      colour = "#2e9d4f";
    } else if (key == "fail") {
      colour = "#b9bfca";
    } else if (key == "trial") {
      colour = "rgba(118,183,178,.45)";
    } else if (key == "truth") {
      colour = "#1d2330";
    } else if (key == "predicted") {
      colour = "#f28e2b";
    } else {
      colour = KindColour(key);
    }
    absl::StrAppend(&out, "<span><i style=\"background:", colour, "\"></i>", Escape(label), "</span>");
  }
  return out + "</div>";
}

std::string RenderJobContent(const JobPageInput& input) {
  const Job& job = input.job;
  return absl::StrCat("<div id=\"content\" data-state=\"", JobState_Name(job.state()), "\" data-step=\"",
                      job.progress().step(), "\">", Header(job), LossSection(job, input.history),
                      PredictionsSection(job, input.history), CostSection(job), TimelineSection(input),
                      ChipSection(job),
                      "<section id=\"report\"><h2>The report</h2><pre>", Escape(FormatReport(job)),
                      "</pre></section></div>");
}

std::string RenderJobPage(const JobPageInput& input, const PageOptions& options) {
  return Page(absl::StrCat(input.job.job_id(), " · HpT"), RenderJobContent(input), options);
}

namespace {

// The list's quality cell: the test skill over persistence, in red where
// the model loses to it; a dash before there are test metrics.
std::string SkillCell(const Job& j) {
  const QualityMetrics& q = j.test_metrics();
  if (q.values() == 0 || q.persistence_rmse() <= 0) return "<td>–</td>";
  return absl::StrCat("<td", q.skill() < 0 ? " class=\"loses\"" : "", ">", Num(q.skill(), 3),
                      "</td>");
}

// The list's phase cell: a dash until the job has started training.
std::string PhaseCell(TrainingPhase::Name phase) {
  return phase == TrainingPhase::TRAINING_PHASE_UNSPECIFIED ? "–" : PhaseName(phase);
}

}  // namespace

std::string RenderJobsContent(const std::vector<Job>& jobs) {
  std::string body = "<h1>HpT jobs</h1>";
  if (jobs.empty()) {
    body += "<p class=\"note\">No jobs yet: submit one with <code>hptctl submit</code>.</p>";
  } else {
    absl::StrAppend(
        &body,
        "<table id=\"jobs\"><thead><tr><th>job</th><th>name</th><th>state</th><th>phase</th>"
        "<th>step</th><th>loss</th><th>skill vs persistence</th><th>switch</th>"
        "<th>time / energy vs GPU-only</th>"
        "<th>owner</th></tr></thead><tbody>");
    for (const Job& j : jobs) {
      const CostComparison& c = j.hpt().comparison();
      absl::StrAppend(
          &body, "<tr><td><a href=\"/jobs/", Escape(j.job_id()), "\">", Escape(j.job_id()),
          "</a></td><td>", Escape(j.name()), "</td><td><span class=\"state ",
          JobState_Name(j.state()), "\">", Escape(StateName(j.state())), "</span></td><td>",
          PhaseCell(j.hpt().phase()), "</td><td>", j.progress().step(), " / ",
          j.progress().total_steps(), "</td><td>",
          j.progress().step() > 0 ? Num(j.progress().loss()) : "–", "</td>", SkillCell(j), "<td>",
          j.hpt().switch_step() >= 0 ? absl::StrCat(j.hpt().switch_step()) : "–", "</td><td>",
          c.hpt_time_s() > 0 ? Num(c.time_ratio(), 3) + "× / " + RatioOrDash(c.energy_ratio())
                             : "–",
          "</td><td>", Escape(j.owner()), "</td></tr>");
    }
    body += "</tbody></table>";
  }
  return "<div id=\"content\" data-state=\"RUNNING\">" + body + "</div>";
}

std::string RenderJobsPage(const std::vector<Job>& jobs, const PageOptions& options) {
  PageOptions list = options;
  list.jobs_href.clear();
  return Page("HpT jobs", RenderJobsContent(jobs), list);
}

void SetPageTimeline(const WorkRecord* record, JobPageInput* input) {
  if (record == nullptr) {
    input->timeline_note = "No step recorded yet.";
    return;
  }
  absl::StatusOr<StepTimeline> timeline = PageTimeline(*record);
  if (timeline.ok()) {
    input->timeline = std::move(*timeline);
  } else {
    input->timeline_note = std::string(timeline.status().message());
  }
}

absl::StatusOr<StepTimeline> PageTimeline(const WorkRecord& record) {
  absl::StatusOr<std::unique_ptr<RecordCosting>> costing = RecordCosting::Create(&record, CostSettings());
  if (!costing.ok()) return costing.status();
  return (*costing)->Timeline(record.switch_step() >= 0 ? record.switch_step() : 0);
}

}  // namespace hpt
