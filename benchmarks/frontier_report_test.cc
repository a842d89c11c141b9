#include "benchmarks/frontier_report.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

// An application whose GPU-only step costs 1 s and LoRA step 0.5 s (one
// baseline), 100 samples at batch 1 for 1 epoch: steps of the small run at
// batch 1 map to samples one to one.
App OneApp() {
  App app;
  app.name = "wind";
  JobCosts c;
  c.comparison.set_full_step_s(1);
  c.comparison.set_lora_step_s(0.5);
  c.comparison.set_full_step_j(1);
  c.comparison.set_lora_step_j(0.5);
  app.costs.push_back(c);
  app.length.train_samples = 100;
  app.length.epochs = 1;
  app.length.batch = 1;
  app.length.window_samples = 10;
  return app;
}

// A seed over 100 steps with grid 20, 40, 60, 80 and RMSEs by step.
SeedRun Seed(std::map<int64_t, double> rmse, std::vector<RuleRun> rules) {
  SeedRun s;
  s.total_steps = 100;
  s.window = 10;
  s.grid = {20, 40, 60, 80};
  s.rmse_at = std::move(rmse);
  s.rmse_full = s.rmse_at.at(100);
  s.rules = std::move(rules);
  s.knee = KneeOf(s, 0.01);
  return s;
}

TEST(FrontierReportTest, KneeIsTheEarliestGridPointWithinTheTolerance) {
  const SeedRun s = Seed({{20, 1.10}, {40, 1.005}, {60, 1.0}, {80, 1.02}, {100, 1.03}}, {});
  EXPECT_EQ(s.knee, 40);  // 1.005 is within 1 % of the best, 1.0
  // Rule points off the grid do not move it.
  SeedRun with_rule = s;
  with_rule.rmse_at[30] = 0.5;
  EXPECT_EQ(KneeOf(with_rule, 0.01), 40);
  // Never switching can be the knee.
  EXPECT_EQ(Seed({{20, 2}, {40, 2}, {60, 2}, {80, 2}, {100, 1}}, {}).knee, 100);
}

TEST(FrontierReportTest, RuleSummaryMeasuresDistanceQualityAndTime) {
  App app = OneApp();
  const std::map<int64_t, double> rmse = {{20, 1.10}, {40, 1.0}, {60, 1.0}, {80, 1.0},
                                          {100, 1.0}};
  // Seed 1: the rule switches at 60 after one trial (20 late); seed 2: at
  // 20 (20 early); seed 3: never (60 late).
  app.seeds.push_back(Seed(rmse, {{"r", 60, 1, 1.0, -1, -1, {}}}));
  app.seeds.push_back(Seed(rmse, {{"r", 20, 1, 1.10, -1, -1, {}}}));
  app.seeds.push_back(Seed(rmse, {{"r", -1, 0, 1.0, -1, -1, {}}}));
  const RuleSummary s = SummarizeRule(app, 0);
  EXPECT_EQ(s.seeds, 3);
  EXPECT_EQ(s.switched, 2);
  EXPECT_DOUBLE_EQ(s.median_distance, 0.2);
  EXPECT_DOUBLE_EQ(s.worst_distance, 0.6);
  EXPECT_DOUBLE_EQ(s.median_signed_steps, 20);
  EXPECT_NEAR(s.worst_rmse_ratio, 1.10, 1e-12);
  EXPECT_NEAR(s.mean_rmse_ratio, 3.1 / 3, 1e-12);
  // HpT time: switch at 40 (the knee): 40 + 30 = 70 s; at 60 with a
  // trial: 60 + 10 + 20 = 90 s; never: 100 s. Time lost, median of
  // 90/70 - 1 and 100/70 - 1.
  EXPECT_NEAR(s.median_time_lost, (90.0 / 70 + 100.0 / 70) / 2 - 1, 1e-12);
  EXPECT_NEAR(s.median_quality_lost, 0.10, 1e-12);
  EXPECT_NEAR(s.mean_time_paper, (100.0 / 90 + 100.0 / 70 + 1) / 3, 1e-12);
}

TEST(FrontierReportTest, DefaultNeedsEveryApplicationToQualify) {
  App a = OneApp();
  const std::map<int64_t, double> rmse = {{20, 1.10}, {40, 1.0}, {60, 1.0}, {80, 1.0},
                                          {100, 1.0}};
  for (int i = 0; i < 5; ++i) {
    // "near" switches at the knee every time; "late" never does.
    a.seeds.push_back(
        Seed(rmse, {{"near", 40, 1, 1.0, -1, -1, {}}, {"late", -1, 0, 1.0, -1, -1, {}}}));
  }
  App b = a;
  b.name = "covid";
  // On covid "near" overshoots RMSE in one seed: it no longer qualifies.
  b.seeds[2].rules[0].rmse = 1.2;
  std::string why;
  EXPECT_EQ(ChooseDefault({a}, {"near", "late"}, &why), "near");
  why.clear();
  EXPECT_EQ(ChooseDefault({a, b}, {"near", "late"}, &why), "");
  EXPECT_NE(why.find("near: covid: RMSE 1.200 of full in its worst seed"), std::string::npos)
      << why;
  EXPECT_NE(why.find("late: wind: switches in 0 of 5"), std::string::npos) << why;
  EXPECT_NE(why.find("median distance to the knee 60 % of the run"), std::string::npos) << why;
  why.clear();
  EXPECT_EQ(ChooseDefault({}, {"near"}, &why), "");
  EXPECT_EQ(why, "  no application was measured\n");
}

TEST(FrontierReportTest, SeedRunSurvivesItsTextForm) {
  SeedRun s = Seed({{20, 1.1}, {40, 1.0 / 3}, {60, 1.0}, {80, 1.0}, {100, 1.0}},
                   {{"paper", -1, 0, 1.0, 1.25, 3.5, {}}, {"plateau", 40, 2, 1.0 / 3, 0.5, 0, {}}});
  s.seed = 44;
  s.devices_step = 40;
  s.devices_rmse = 0.34;
  s.wall_s = 12.5;
  RuleRun layerwise;
  layerwise.rule = "layerwise";
  layerwise.step = 60;
  layerwise.rmse = 0.31;
  layerwise.layer_steps = {20, 60};
  s.rules.push_back(layerwise);
  SeedRun back;
  ASSERT_TRUE(ParseSeedRun(FormatSeedRun(s), &back).ok());
  EXPECT_EQ(back.seed, 44u);
  EXPECT_EQ(back.total_steps, 100);
  EXPECT_EQ(back.knee, s.knee);
  EXPECT_EQ(back.grid, s.grid);
  EXPECT_EQ(back.rmse_at, s.rmse_at);  // every digit
  ASSERT_EQ(back.rules.size(), 3u);
  EXPECT_EQ(back.rules[2].layer_steps, (std::vector<int64_t>{20, 60}));
  EXPECT_EQ(back.rules[2].rmse, 0.31);
  EXPECT_TRUE(back.rules[1].layer_steps.empty());
  EXPECT_EQ(back.rules[1].rule, "plateau");
  EXPECT_EQ(back.rules[1].step, 40);
  EXPECT_EQ(back.rules[1].trials, 2);
  EXPECT_EQ(back.rules[0].closest_weight, 3.5);
  EXPECT_EQ(back.devices_rmse, 0.34);
  SeedRun failed;
  failed.error = "no checkpoint at step 40";
  ASSERT_TRUE(ParseSeedRun(FormatSeedRun(failed), &back).ok());
  EXPECT_EQ(back.error, "no checkpoint at step 40");
  EXPECT_FALSE(ParseSeedRun("", &back).ok());
  EXPECT_FALSE(ParseSeedRun("seed 1\nbogus 2\n", &back).ok());
}

}  // namespace
}  // namespace hpt
