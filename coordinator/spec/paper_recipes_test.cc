// Pins each preset's defaults to the paper's code (github.com/saimandahal/HpT
// at 62ccc4cb528f72c735e57df6cca39cce629a0b4e): the values and the lines
// they were read from. A change here is a change of what "the paper's
// recipe" means, and must come with the line that justifies it.
#include "coordinator/spec/paper_recipes.h"

#include <cmath>

#include "coordinator/spec/job_spec.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

struct Expected {
  const char* preset;
  int epochs;
  const char* epochs_source;
  const char* batch_source;
  OptimizerType full_type;
  double full_lr, full_wd;
  const char* full_source;
  int step_size;
  double gamma;
  const char* schedule_source;
  double lora_lr, lora_wd;
  const char* lora_source;
  int64_t window;
  const char* window_source;
  bool last_layer;
  const char* layer_source;
};

TEST(PaperRecipes, EachValueAndItsLine) {
  const Expected expected[] = {
      {"swe", 24, "model/swe/main.py:660", "model/swe/SDL.py:175", ADAMW, 1e-4, 1e-4,
       "model/swe/main.py:297", 3, 0.6, "model/swe/main.py:298", 1e-4, 1e-4,
       "model/swe/main.py:455", 365, "model/swe/main.py:410", true, "model/swe/main.py:336"},
      {"weather", 22, "model/weather/hybrid_model.py:662", "model/weather/DL.py:118", ADAMW,
       1e-4, 1e-4, "model/weather/hybrid_model.py:293", 3, 0.6,
       "model/weather/hybrid_model.py:294", 1e-4, 1e-4, "model/weather/hybrid_model.py:462",
       8000, "model/weather/hybrid_model.py:413", true, "model/weather/hybrid_model.py:338"},
      {"covid", 20, "model/covid/main.py:228", "model/covid/main.py:55", ADAM, 1e-5, 0,
       "model/covid/main.py:66", 0, 1, "model/covid/main.py:66 (no scheduler)", 1e-5, 1e-4,
       "model/covid/main.py:321", 720, "model/covid/main.py:246", false,
       "model/covid/main.py:105"},
      {"wind", 24, "model/wind/main.py:254", "model/wind/main.py:65", ADAM, 1e-6, 0,
       "model/wind/main.py:90", 0, 1, "model/wind/main.py:90 (no scheduler)", 1e-4, 1e-4,
       "model/wind/main.py:346", 480, "model/wind/main.py:275", false,
       "model/wind/main.py:129"},
  };
  ASSERT_EQ(PaperRecipes().size(), 4u);
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.preset);
    const PaperRecipe* r = FindPaperRecipe(e.preset);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->epochs, e.epochs);
    EXPECT_STREQ(r->epochs_source, e.epochs_source);
    EXPECT_EQ(r->batch_size, 1);
    EXPECT_STREQ(r->batch_source, e.batch_source);
    EXPECT_EQ(r->full.type, e.full_type);
    EXPECT_DOUBLE_EQ(r->full.learning_rate, e.full_lr);
    EXPECT_DOUBLE_EQ(r->full.weight_decay, e.full_wd);
    EXPECT_STREQ(r->full.source, e.full_source);
    EXPECT_EQ(r->step_lr_step_size, e.step_size);
    EXPECT_DOUBLE_EQ(r->step_lr_gamma, e.gamma);
    EXPECT_STREQ(r->schedule_source, e.schedule_source);
    EXPECT_EQ(r->lora.type, ADAMW);  // every script's LoRA phase
    EXPECT_DOUBLE_EQ(r->lora.learning_rate, e.lora_lr);
    EXPECT_DOUBLE_EQ(r->lora.weight_decay, e.lora_wd);
    EXPECT_STREQ(r->lora.source, e.lora_source);
    EXPECT_EQ(r->window_samples, e.window);
    EXPECT_STREQ(r->window_source, e.window_source);
    EXPECT_EQ(r->weight_layer_last, e.last_layer);
    EXPECT_STREQ(r->weight_layer_source, e.layer_source);
    EXPECT_EQ(PaperEpochs(e.preset), e.epochs);
    EXPECT_EQ(PaperWindow(e.preset), e.window);
    EXPECT_EQ(PaperWeightLayer(e.preset, 12), e.last_layer ? 11 : 0);
  }
  EXPECT_EQ(FindPaperRecipe("tiny"), nullptr);
  EXPECT_EQ(PaperEpochs("tiny"), 0);
  EXPECT_EQ(PaperWindow("tiny"), 10);
}

JobSpec Spec(const std::string& preset) {
  JobSpec spec;
  spec.mutable_model()->set_preset(preset);
  spec.mutable_data()->mutable_csv()->set_path("x.csv");
  return spec;
}

TEST(PaperRecipes, APresetJobTakesItsRecipeAtBatchOne) {
  absl::StatusOr<JobSpec> s = NormalizeJobSpec(Spec("swe"));
  ASSERT_TRUE(s.ok()) << s.status();
  const TrainingSpec& t = s->training();
  EXPECT_EQ(t.epochs(), 24);
  EXPECT_EQ(t.batch_size(), 1);
  EXPECT_EQ(t.optimizer().type(), ADAMW);
  EXPECT_DOUBLE_EQ(t.optimizer().learning_rate(), 1e-4);
  EXPECT_DOUBLE_EQ(t.optimizer().weight_decay(), 1e-4);
  EXPECT_EQ(t.step_lr_step_size(), 3);
  EXPECT_DOUBLE_EQ(t.step_lr_gamma(), 0.6);
  EXPECT_NE(t.learning_rate_rule().find("model/swe/main.py:297"), std::string::npos)
      << t.learning_rate_rule();
  EXPECT_EQ(t.learning_rate_rule().find("sqrt"), std::string::npos);
  EXPECT_EQ(s->hpt().lora_optimizer().type(), ADAMW);
  EXPECT_DOUBLE_EQ(s->hpt().lora_optimizer().learning_rate(), 1e-4);
  EXPECT_EQ(s->hpt().check_window_samples(), 365);
  EXPECT_EQ(s->hpt().check_window_steps(), 365);
}

TEST(PaperRecipes, AnotherBatchScalesTheRatesBySquareRootAndSaysSo) {
  JobSpec spec = Spec("wind");
  spec.mutable_training()->set_batch_size(16);
  absl::StatusOr<JobSpec> s = NormalizeJobSpec(spec);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->training().optimizer().type(), ADAM);
  EXPECT_NEAR(s->training().optimizer().learning_rate(), 4e-6, 1e-18);
  EXPECT_EQ(s->training().step_lr_step_size(), 0);
  EXPECT_NEAR(s->hpt().lora_optimizer().learning_rate(), 4e-4, 1e-16);
  EXPECT_DOUBLE_EQ(s->hpt().lora_optimizer().weight_decay(), 1e-4);
  for (const std::string& rule :
       {s->training().learning_rate_rule(), s->hpt().lora_learning_rate_rule()}) {
    EXPECT_NE(rule.find("sqrt(16/1)"), std::string::npos) << rule;
    EXPECT_NE(rule.find("Malladi"), std::string::npos) << rule;
  }
  // Normalising again changes nothing (a stored spec is re-normalised).
  absl::StatusOr<JobSpec> again = NormalizeJobSpec(*s);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->SerializeAsString(), s->SerializeAsString());
}

TEST(PaperRecipes, WhatTheJobGivesIsKept) {
  JobSpec spec = Spec("covid");
  TrainingSpec& t = *spec.mutable_training();
  t.set_batch_size(4);
  t.set_epochs(2);
  t.mutable_optimizer()->set_learning_rate(3e-4);
  t.set_step_lr_gamma(1);  // constant, said explicitly
  spec.mutable_hpt()->mutable_lora_optimizer()->set_type(ADAM);
  absl::StatusOr<JobSpec> s = NormalizeJobSpec(spec);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->training().epochs(), 2);
  EXPECT_DOUBLE_EQ(s->training().optimizer().learning_rate(), 3e-4);
  EXPECT_EQ(s->training().optimizer().type(), ADAM);  // the recipe's type
  EXPECT_EQ(s->training().learning_rate_rule(), "");
  EXPECT_EQ(s->hpt().lora_optimizer().type(), ADAM);
  EXPECT_DOUBLE_EQ(s->hpt().lora_optimizer().weight_decay(), 0);  // not the recipe's AdamW's
  EXPECT_NEAR(s->hpt().lora_optimizer().learning_rate(), 2e-5, 1e-18);  // 1e-5 x sqrt(4)
}

TEST(PaperRecipes, TinyKeepsTheGenericDefaults) {
  absl::StatusOr<JobSpec> s = NormalizeJobSpec(Spec("tiny"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->training().epochs(), 3);
  EXPECT_EQ(s->training().batch_size(), 16);
  EXPECT_EQ(s->training().optimizer().type(), ADAM);
  EXPECT_DOUBLE_EQ(s->training().optimizer().learning_rate(), 1e-3);
  EXPECT_EQ(s->training().step_lr_step_size(), 0);
  EXPECT_DOUBLE_EQ(s->training().step_lr_gamma(), 0.5);
  EXPECT_EQ(s->hpt().lora_optimizer().type(), ADAM);
  EXPECT_DOUBLE_EQ(s->hpt().lora_optimizer().learning_rate(), 1e-3);
  EXPECT_EQ(s->training().learning_rate_rule(), "");
}

TEST(PaperRecipes, ABadLoraOptimizerIsNamed) {
  JobSpec spec = Spec("tiny");
  spec.mutable_hpt()->mutable_lora_optimizer()->set_learning_rate(-1);
  absl::StatusOr<JobSpec> s = NormalizeJobSpec(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("hpt.lora_optimizer.learning_rate"), std::string::npos)
      << s.status();
  spec = Spec("tiny");
  spec.mutable_hpt()->mutable_lora_optimizer()->set_beta2(1.5);
  s = NormalizeJobSpec(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("hpt.lora_optimizer.beta2"), std::string::npos)
      << s.status();
}

TEST(PaperRecipes, SquareRootRule) {
  EXPECT_DOUBLE_EQ(ScaleLearningRate(1e-4, 1, 1), 1e-4);
  EXPECT_DOUBLE_EQ(ScaleLearningRate(1e-4, 1, 4), 2e-4);
  EXPECT_DOUBLE_EQ(ScaleLearningRate(1e-4, 4, 1), 5e-5);
  EXPECT_NEAR(ScaleLearningRate(1e-6, 1, 32), 1e-6 * std::sqrt(32.0), 1e-20);
}

}  // namespace
}  // namespace hpt
