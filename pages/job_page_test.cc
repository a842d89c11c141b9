#include "pages/job_page.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "pages/svg.h"

namespace hpt {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Job SmallJob() {
  Job job;
  job.set_job_id("job-000007");
  job.set_name("<script>alert(1)</script>");
  job.set_state(RUNNING);
  HptStatus* h = job.mutable_hpt();
  h->set_switch_step(12);
  h->set_phase(TrainingPhase::lora);
  for (const auto& [phase, s, j] : {std::tuple{CostPhase::full, 0.3, 2.0},
                                    {CostPhase::switch_, 0.1, 1.0},
                                    {CostPhase::lora, 0.2, 0.5}}) {
    PhaseCost* p = h->add_phases();
    p->set_phase(phase);
    p->set_simulated_s(s);
    p->set_energy_j(j);
    (*p->mutable_device_energy_j())["gpu"] = j;
  }
  CostComparison* c = h->mutable_comparison();
  c->set_hpt_time_s(0.6);
  c->set_hpt_energy_j(3.5);
  c->set_baseline(GpuBaseline::paper);
  BaselineComparison* b = c->add_baselines();
  b->set_baseline("paper");
  b->set_gpu_only_time_s(1.2);
  return job;
}

TEST(SvgTest, EscapesAndRoundTicks) {
  EXPECT_EQ(Escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  const std::vector<double> ticks = Ticks(0, 1, 5, false);
  ASSERT_EQ(ticks.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(ticks[i], 0.2 * i, 1e-12);
  EXPECT_EQ(Ticks(0.01, 2, 5, true), (std::vector<double>{0.01, 0.1, 1}));
  // An axis of whole steps over two steps: ticks at 0 and 1 only.
  PlotArea steps(200, 100);
  steps.SetX(0, 1);
  steps.SetY(0, 10);  // y ticks 0, 2, ..., 10
  steps.SetXWhole();
  steps.Axes("step", "loss");
  EXPECT_NE(steps.body.find("text-anchor=\"middle\">0</text>"), std::string::npos) << steps.body;
  EXPECT_NE(steps.body.find("text-anchor=\"middle\">1</text>"), std::string::npos) << steps.body;
  EXPECT_EQ(steps.body.find(">0.2</text>"), std::string::npos) << steps.body;
  EXPECT_EQ(Seconds(0.000268), "268 µs");
  EXPECT_EQ(Joules(42.7), "42.7 J");
}

TEST(JobPageTest, ThePhaseIsNamedOnThePageAndInTheList) {
  JobPageInput in;
  in.job = SmallJob();
  EXPECT_NE(RenderJobPage(in, PageOptions()).find("<b id=\"phase\">lora</b>"), std::string::npos);
  Job queued = SmallJob();
  queued.set_state(QUEUED);
  queued.mutable_hpt()->clear_phase();
  in.job = queued;
  // Not started: the page reads it as the full phase, the list as a dash.
  EXPECT_NE(RenderJobPage(in, PageOptions()).find("<b id=\"phase\">full</b>"), std::string::npos);
  const std::string list = RenderJobsContent({SmallJob(), queued});
  EXPECT_NE(list.find("</span></td><td>lora</td>"), std::string::npos) << list;
  EXPECT_NE(list.find("</span></td><td>–</td>"), std::string::npos) << list;
}

TEST(JobPageTest, NamesAreEscapedAndBarsCarryTheirValues) {
  JobPageInput in;
  in.job = SmallJob();
  for (int s = 0; s < 30; ++s) in.history.add_first_step(s), in.history.add_loss_mean(1.0f / (s + 1)),
                                 in.history.add_loss_min(1.0f / (s + 1)), in.history.add_loss_max(1.0f / (s + 1));
  in.history.set_steps(30);
  in.history.set_bucket(1);
  const std::string html = RenderJobPage(in, PageOptions());
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)"), std::string::npos);
  EXPECT_NE(html.find("data-points=\"30\""), std::string::npos);
  EXPECT_NE(html.find("<g class=\"switch\" data-step=\"12\">"), std::string::npos);
  EXPECT_NE(html.find("data-bar=\"hpt-phases\" data-total=\"0.6000000000"), std::string::npos);
  EXPECT_NE(html.find("data-bar=\"gpu-only-paper\" data-total=\"1.2\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"switch-why\""), std::string::npos) << "no SWITCH event: no why";
  // Each phase's segment and legend entry carry the phase's own colour.
  for (const auto& [phase, colour] :
       {std::pair{"full", "#4e79a7"}, {"switch", "#e15759"}, {"lora", "#59a14f"}}) {
    EXPECT_NE(html.find(absl::StrCat("data-label=\"", phase, "\" data-value=\"")),
              std::string::npos)
        << phase;
    EXPECT_NE(html.find(absl::StrCat("fill=\"", colour, "\"><title>HpT, by phase, ", phase, ":")),
              std::string::npos)
        << phase;
    EXPECT_NE(html.find(absl::StrCat("<i style=\"background:", colour, "\"></i>", phase, " phase")),
              std::string::npos)
        << phase;
  }
  // A file page has no script; a live one re-reads its content.
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  PhaseEvent& sw = *in.job.mutable_hpt()->add_events();
  sw.set_kind(PhaseEvent::SWITCH);
  sw.set_iteration(11);
  sw.set_reason("hpt.trial_test none: the check decides <now>");
  EXPECT_NE(RenderJobPage(in, PageOptions())
                .find("<p class=\"note\" id=\"switch-why\">Switched to LoRA after step 11: "
                      "hpt.trial_test none: the check decides &lt;now&gt;.</p>"),
            std::string::npos);
  EXPECT_NE(RenderJobPage(in, PageOptions{true, "/"}).find("?part=content"), std::string::npos);
}

// The header names the model's shape once the job knows it.
TEST(JobPageTest, TheHeaderNamesTheModelsShapeOnceKnown) {
  JobPageInput in;
  in.job = SmallJob();
  EXPECT_EQ(RenderJobPage(in, PageOptions()).find("id=\"shape\""), std::string::npos);
  ModelConfig* m = in.job.mutable_model();
  m->set_input_features(12);
  m->set_output_features(1);
  m->set_d_model(32);
  m->set_num_layers(2);
  m->set_num_heads(4);
  m->set_ff_multiplier(2);
  m->set_reduction_dim(16);
  EXPECT_NE(RenderJobPage(in, PageOptions())
                .find("<p class=\"note\" id=\"shape\">model: 2 layers, d_model 32, 4 heads, "
                      "FF x2, reduction 16; 19,105 parameters</p>"),
            std::string::npos);
}

// Batch-1 losses scatter: past 40 points a trend line draws each point's
// mean over the points around it (a twentieth of them); fewer points draw
// none. Alternating losses 1 and 3 trend at 2 wherever the window is full.
TEST(JobPageTest, ManyNoisyStepsDrawTheirTrend) {
  JobPageInput in;
  in.job = SmallJob();
  const auto steps = [&](int n) {
    in.history = JobHistory();
    for (int s = 0; s < n; ++s) {
      const float loss = s % 2 == 0 ? 1.0f : 3.0f;
      in.history.add_first_step(s), in.history.add_loss_mean(loss);
      in.history.add_loss_min(loss), in.history.add_loss_max(loss);
    }
    in.history.set_steps(n);
    in.history.set_bucket(1);
    return RenderJobContent(in);
  };
  const std::string few = steps(39);
  EXPECT_EQ(few.find("train-trend"), std::string::npos);
  EXPECT_NE(few.find("<polyline class=\"series train\""), std::string::npos);
  const std::string many = steps(400);
  // 10 points either side: 21 steps, whose mean is 2 +- 1/21.
  const size_t at = many.find("data-series=\"train-trend\" data-steps=\"21\" points=\"");
  ASSERT_NE(at, std::string::npos) << many;
  EXPECT_NE(many.find("<polyline class=\"series train faint\""), std::string::npos);
  EXPECT_NE(many.find("its trend: the mean of the 21 steps around"), std::string::npos);
  EXPECT_NE(many.find("the dark line their trend (each the mean of the 21 steps around it)"),
            std::string::npos);
  // The plot is linear (the losses span threefold): where its window is
  // full, each trend point sits at loss 2 +- 1/21, between the y of the
  // raw losses 1 and 3.
  const auto ys_of = [&](const std::string& series) {
    const size_t start = many.find("data-series=\"" + series + "\"");
    const size_t from = many.find("points=\"", start) + 8;
    std::vector<double> ys;
    for (absl::string_view pair :
         absl::StrSplit(many.substr(from, many.find('"', from) - from), ' ', absl::SkipEmpty())) {
      double y = 0;
      EXPECT_TRUE(absl::SimpleAtod(pair.substr(pair.find(',') + 1), &y)) << pair;
      ys.push_back(y);
    }
    return ys;
  };
  const std::vector<double> raw = ys_of("train-loss"), trend = ys_of("train-trend");
  ASSERT_EQ(raw.size(), 400u);
  ASSERT_EQ(trend.size(), 400u);
  const double y1 = raw[0], y3 = raw[1], mid = (y1 + y3) / 2;
  ASSERT_GT(std::fabs(y1 - y3), 50) << "the raw losses are apart on the plot";
  for (int i = 10; i < 390; ++i) {
    EXPECT_NEAR(trend[i], mid, std::fabs(y1 - y3) / 2 / 21 + 0.06) << "point " << i;
  }
}

// A row measured on a CPU worker is that CPU's wall time, never called a
// GPU-only baseline; one timed on a GPU is.
TEST(JobPageTest, ARowMeasuredOnACpuIsNotCalledGpuOnly) {
  JobPageInput in;
  in.job = SmallJob();
  CostComparison& c = *in.job.mutable_hpt()->mutable_comparison();
  for (bool on_gpu : {false, true}) {
    BaselineComparison& b = *c.add_baselines();
    b.set_baseline(on_gpu ? "graph" : "libtorch");
    b.set_measured(true);
    b.set_measured_on_gpu(on_gpu);
    b.set_gpu_only_time_s(on_gpu ? 0.4 : 7.3);
    b.set_time_ratio(1);
  }
  const std::string html = RenderJobContent(in);
  EXPECT_NE(html.find(">libtorch measured on a CPU</text>"), std::string::npos) << html;
  EXPECT_EQ(html.find("GPU-only, libtorch measured"), std::string::npos);
  EXPECT_NE(html.find(">GPU-only, graph measured</text>"), std::string::npos);
  EXPECT_NE(html.find(">GPU-only, paper (job&#39;s)</text>"), std::string::npos);
}

// A job that failed before its first step has no loss, skill or switch to
// show, where a job that switched shows them.
TEST(JobPageTest, TheListShowsNoLossOrSwitchBeforeTheFirstStep) {
  Job failed;
  failed.set_job_id("job-000002");
  failed.set_state(FAILED);
  failed.mutable_hpt()->set_switch_step(-1);
  Job switched = SmallJob();
  switched.mutable_progress()->set_step(40);
  switched.mutable_progress()->set_total_steps(40);
  switched.mutable_progress()->set_loss(0.25);
  switched.mutable_test_metrics()->set_values(100);
  switched.mutable_test_metrics()->set_persistence_rmse(1.312);
  switched.mutable_test_metrics()->set_skill(-0.137);
  const std::string list = RenderJobsContent({failed, switched});
  EXPECT_NE(list.find("<td>0 / 0</td><td>–</td><td>–</td><td>–</td><td>–</td>"), std::string::npos)
      << list;
  // Its skill over persistence, red where it loses.
  EXPECT_NE(list.find("<td>40 / 40</td><td>0.25</td><td class=\"loses\">-0.137</td><td>12</td>"),
            std::string::npos)
      << list;
}

// Before any metrics the quality card says why there are none: the
// evaluation is running, there is no test split, the job ended first, or
// its first epoch has not ended.
TEST(JobPageTest, TheQualityCardSaysWhyItHasNoMetricsYet) {
  Job job;
  job.set_state(RUNNING);
  job.mutable_progress()->set_epoch(1);  // the first epoch, under way
  job.mutable_data()->set_source("csv");
  job.mutable_data()->set_test_samples(1677);
  auto card = [&] {
    JobPageInput input;
    input.job = job;
    const std::string page = RenderJobContent(input);
    const std::string open = "id=\"quality\">";
    const size_t at = page.find(open);
    if (at == std::string::npos) return page;
    const size_t from = at + open.size();
    return page.substr(from, page.find("</p>", from) - from);
  };
  EXPECT_EQ(card(), "No evaluation has run yet: it follows each epoch.");
  job.mutable_progress()->set_evaluating("the test split: 576 of 1677 samples");
  EXPECT_EQ(card(), "Evaluating the test split: 576 of 1677 samples.");
  job.mutable_progress()->clear_evaluating();
  job.set_state(FAILED);
  EXPECT_EQ(card(), "No evaluation ran: the job ended before its first epoch did.");
  job.mutable_data()->set_test_samples(0);
  job.mutable_data()->set_split("training rows given and no test rows: no test split");
  EXPECT_EQ(card(),
            "This job has no test split, so no quality to show (training rows given and no test "
            "rows: no test split).");
}

TEST(JobPageTest, ValidationLossStandsBesideTheTestLoss) {
  JobPageInput in;
  in.job = SmallJob();
  for (int s = 0; s < 20; ++s) {
    in.history.add_first_step(s), in.history.add_loss_mean(1), in.history.add_loss_min(1),
        in.history.add_loss_max(1);
  }
  in.history.set_steps(20);
  in.history.set_bucket(1);
  for (int e = 1; e <= 2; ++e) {
    EpochPoint& p = *in.history.add_epochs();
    p.set_epoch(e);
    p.set_last_step(10 * e - 1);
    p.set_train_loss(1);
    p.set_test_loss(0.9);
  }
  // Without a validation split: no squares and no legend entry.
  EXPECT_EQ(RenderJobContent(in).find("validation"), std::string::npos);
  in.history.mutable_epochs(0)->set_validation_loss(0.5);
  in.history.mutable_epochs(1)->set_validation_loss(0.45);
  const std::string html = RenderJobContent(in);
  EXPECT_NE(html.find("data-series=\"validation-loss\" data-count=\"2\""), std::string::npos)
      << html;
  EXPECT_NE(html.find("<title>epoch 2: validation loss 0.45</title>"), std::string::npos);
  EXPECT_EQ(Count(html, "validation loss after an epoch"), 1u);  // the legend
}

TEST(JobPageTest, SkillStandsBesideTheRmseAndALosingModelIsRed) {
  JobPageInput in;
  in.job = SmallJob();
  in.job.mutable_progress()->set_epoch(2);
  QualityMetrics& q = *in.job.mutable_test_metrics();
  q.set_values(100);
  q.set_rmse(14.09);
  q.set_persistence_rmse(18.02);
  q.set_skill(1 - 14.09 / 18.02);
  q.set_climatology_rmse(58.3);
  q.set_climatology("station mean by hour of day");
  in.job.mutable_data()->set_unit("m3/s");
  in.job.mutable_data()->set_time_column("datetime");
  in.job.mutable_data()->set_first_time("2023-01-01 00:00");
  in.job.mutable_data()->set_last_time("2023-05-05 23:00");
  std::string html = RenderJobPage(in, PageOptions());
  EXPECT_NE(html.find("<b>0.218</b><span>skill over persistence (1 - RMSE / 18.02 m3/s)"),
            std::string::npos) << html;
  EXPECT_NE(html.find("<b>58.3 m3/s</b><span>climatology RMSE (station mean by hour of day)"),
            std::string::npos);
  EXPECT_NE(html.find("rows from 2023-01-01 00:00 to 2023-05-05 23:00 UTC (datetime)"),
            std::string::npos);
  EXPECT_EQ(html.find("card loses"), std::string::npos);
  // Predictions plotted against their target times.
  TestPredictions& p = *in.history.mutable_predictions();
  p.set_samples(4);
  p.add_tokens(0);
  for (int s = 0; s < 4; ++s) {
    p.add_truth(float(s));
    p.add_predicted(float(s) + 0.5f);
    p.add_times(1681171200 + 3600 * s);  // 2023-04-11 00:00, hourly
  }
  html = RenderJobPage(in, PageOptions());
  EXPECT_NE(html.find(">04-11 00:00</text>"), std::string::npos) << html;
  EXPECT_NE(html.find(">04-11 02:00</text>"), std::string::npos);
  EXPECT_NE(html.find("time (UTC): station 0"), std::string::npos);
  q.set_skill(-0.25);
  html = RenderJobPage(in, PageOptions());
  EXPECT_NE(html.find("<div class=\"card loses\"><b>-0.25</b><span>loses to persistence"),
            std::string::npos) << html;
}

// A ratio of 1 or more is a saving; below 1 the card is red and says HpT
// is the slower one (time) or the one that uses more (energy).
TEST(JobPageTest, RatiosBelowOneAreRedAndSayWhoIsSlower) {
  JobPageInput in;
  in.job = SmallJob();
  CostComparison& c = *in.job.mutable_hpt()->mutable_comparison();
  c.set_baseline(GpuBaseline::paper);
  c.set_hpt_time_s(4.9);
  c.set_time_ratio(3.72);
  c.set_energy_ratio(4.5);
  std::string html = RenderJobPage(in, PageOptions());
  EXPECT_NE(html.find("<div class=\"card\"><b>3.72×</b><span>time saved vs GPU-only (paper)"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<div class=\"card\"><b>4.5×</b><span>energy saved vs GPU-only"),
            std::string::npos);
  EXPECT_EQ(html.find("card loses"), std::string::npos);
  c.set_time_ratio(0.138);
  c.set_energy_ratio(0.788);
  html = RenderJobPage(in, PageOptions());
  EXPECT_NE(html.find("<div class=\"card loses\"><b>0.138×</b><span>time vs GPU-only (paper): "
                      "HpT is slower"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<div class=\"card loses\"><b>0.788×</b><span>energy vs GPU-only: HpT "
                      "uses more"),
            std::string::npos);
}

TEST(JobPageTest, ManyChecksBecomeTwoPathsAndTheTableItsLastRows) {
  JobPageInput in;
  in.job = SmallJob();
  in.history.add_first_step(0);
  in.history.add_loss_mean(1);
  in.history.add_loss_min(1);
  in.history.add_loss_max(1);
  in.history.set_steps(100000);
  in.history.set_bucket(100);
  for (int i = 0; i < 5000; ++i) {
    PhaseEvent* e = in.job.mutable_hpt()->add_events();
    e->set_iteration(20 * i);
    e->set_loss_passed(i % 2 == 0);
    e->set_weight_passed(true);
  }
  const std::string html = RenderJobContent(in);
  EXPECT_EQ(Count(html, "<g class=\"check"), 2u);
  EXPECT_NE(html.find("<g class=\"check pass\" data-count=\"2500\">"), std::string::npos);
  EXPECT_NE(html.find("the last 300 of 5000"), std::string::npos);
  EXPECT_EQ(Count(html, "<tr><td>"), 300u);
  EXPECT_LT(html.size(), 400000u);
}

TEST(JobPageTest, LayerwiseShowsEachLayersSwitch) {
  JobPageInput in;
  in.job = SmallJob();
  in.job.mutable_hpt()->set_switch_step(-1);
  in.job.mutable_hpt()->add_layer_switch_steps(120);
  in.job.mutable_hpt()->add_layer_switch_steps(-1);
  const std::string html = RenderJobContent(in);
  EXPECT_NE(html.find("<b>0 @120 · 1 full</b>"), std::string::npos) << html;
  EXPECT_NE(html.find("switch (layerwise)"), std::string::npos);
  in.job.mutable_hpt()->clear_layer_switch_steps();
  EXPECT_EQ(RenderJobContent(in).find("switch (layerwise)"), std::string::npos);
}

TEST(JobPageTest, ANeverSwitchedJobSaysHowCloseEachTestCame) {
  JobPageInput in;
  in.job = SmallJob();
  in.job.set_state(SUCCEEDED);
  in.job.mutable_progress()->set_total_steps(4334);
  HptStatus& h = *in.job.mutable_hpt();
  h.set_switch_step(-1);
  h.set_phase(TrainingPhase::full);
  h.set_check_window_steps(250);
  PhaseEvent& e = *h.add_events();
  e.set_kind(PhaseEvent::CHECK);
  e.set_iteration(749);
  e.set_loss_passed(true);
  e.set_loss_margin(0.28);
  e.set_loss_detail("loss: first drop 2.8 % (bound 10 %)");
  e.set_weight_margin(8.7);
  e.set_weight_detail("weights: first drop 8.7 % (bound 1 %)");
  e.set_reason("weights still moving");
  in.history.add_first_step(0);
  in.history.add_loss_mean(1);
  in.history.add_loss_min(1);
  in.history.add_loss_max(1);
  in.history.set_steps(4334);
  in.history.set_bucket(1);
  const std::string html = RenderJobContent(in);
  EXPECT_NE(html.find("<pre class=\"note\" id=\"no-switch\">never switched: 1 checks over 17 "
                      "windows of 250 steps\n  loss test   failed 0 of 1 checks; passed at step "
                      "749\n  weight "
                      "test failed 1 of 1 checks; closest at step 749: 8.7 of its bound "
                      "(weights: first drop 8.7 % (bound 1 %))\n"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<b>never</b>"), std::string::npos) << "the switch card";
  // Its ratios of 1 are no saving: one card says so, none says "saved 1x".
  in.job.mutable_progress()->set_step(4334);
  in.job.mutable_hpt()->mutable_comparison()->set_time_ratio(1);
  const std::string ended = RenderJobContent(in);
  EXPECT_NE(ended.find("<b>nothing</b><span>saved: without a switch every step trains as "
                       "GPU-only training would</span>"),
            std::string::npos)
      << ended;
  EXPECT_EQ(ended.find("time saved vs"), std::string::npos);
  // The checks table: each test's verdict with its margin, what decided it on hover.
  EXPECT_NE(html.find("<td title=\"weights: first drop 8.7 % (bound 1 %)\">fail (8.7)</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td title=\"loss: first drop 2.8 % (bound 10 %)\">pass (0.28)</td>"),
            std::string::npos);
  if (const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    std::ofstream(std::string(dir) + "/never-switched.html")
        << RenderJobPage(in, PageOptions());
  }
}

}  // namespace
}  // namespace hpt
