#include "coordinator/spec/paper_recipes.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hpt {
namespace {

// Each line below was read in the paper's code at kPaperCodeCommit; the
// file and line are beside each value. "index > 23" ends the epoch loop
// after 24 epochs; the weight test reads transformer_layers.11 (the last of
// 12) or .0.
std::vector<PaperRecipe> MakeRecipes() {
  std::vector<PaperRecipe> r(4);
  r[0].preset = "swe";
  r[0].epochs = 24;                                // while-loop ends at index > 23
  r[0].epochs_source = "model/swe/main.py:660";
  r[0].batch_size = 1;                             // generateBatches(train_inputs, 1)
  r[0].batch_source = "model/swe/SDL.py:175";
  r[0].full = {ADAMW, 1e-4, 1e-4, "model/swe/main.py:297"};
  r[0].step_lr_step_size = 3;                      // StepLR(step_size=3, gamma=0.6)
  r[0].step_lr_gamma = 0.6;
  r[0].schedule_source = "model/swe/main.py:298";
  r[0].lora = {ADAMW, 1e-4, 1e-4, "model/swe/main.py:455"};
  r[0].window_samples = 365;                       // check_iterations_loss = 365
  r[0].window_source = "model/swe/main.py:410";
  r[0].weight_layer_last = true;                   // transformer_layers.11
  r[0].weight_layer_source = "model/swe/main.py:336";

  r[1].preset = "weather";
  r[1].epochs = 22;                                // index > 21
  r[1].epochs_source = "model/weather/hybrid_model.py:662";
  r[1].batch_size = 1;                             // getTrainingData(self, batch_size=1)
  r[1].batch_source = "model/weather/DL.py:118";
  r[1].full = {ADAMW, 1e-4, 1e-4, "model/weather/hybrid_model.py:293"};
  r[1].step_lr_step_size = 3;
  r[1].step_lr_gamma = 0.6;
  r[1].schedule_source = "model/weather/hybrid_model.py:294";
  r[1].lora = {ADAMW, 1e-4, 1e-4, "model/weather/hybrid_model.py:462"};
  r[1].window_samples = 8000;                      // check_iterations_loss = 8000
  r[1].window_source = "model/weather/hybrid_model.py:413";
  r[1].weight_layer_last = true;
  r[1].weight_layer_source = "model/weather/hybrid_model.py:338";

  r[2].preset = "covid";
  r[2].epochs = 20;                                // num_epochs = 20
  r[2].epochs_source = "model/covid/main.py:228";
  r[2].batch_size = 1;                             // DataLoader(..., batch_size=1)
  r[2].batch_source = "model/covid/main.py:55";
  r[2].full = {ADAM, 1e-5, 0, "model/covid/main.py:66"};
  r[2].schedule_source = "model/covid/main.py:66 (no scheduler)";
  r[2].lora = {ADAMW, 1e-5, 1e-4, "model/covid/main.py:321"};
  r[2].window_samples = 720;                       // check_iterations_loss = 720
  r[2].window_source = "model/covid/main.py:246";
  r[2].weight_layer_last = false;                  // transformer_layers.0
  r[2].weight_layer_source = "model/covid/main.py:105";

  r[3].preset = "wind";
  r[3].epochs = 24;                                // num_epochs = 24
  r[3].epochs_source = "model/wind/main.py:254";
  r[3].batch_size = 1;
  r[3].batch_source = "model/wind/main.py:65";
  r[3].full = {ADAM, 1e-6, 0, "model/wind/main.py:90"};
  r[3].schedule_source = "model/wind/main.py:90 (no scheduler)";
  r[3].lora = {ADAMW, 1e-4, 1e-4, "model/wind/main.py:346"};
  r[3].window_samples = 480;                       // check_iterations_loss = 480
  r[3].window_source = "model/wind/main.py:275";
  r[3].weight_layer_last = false;
  r[3].weight_layer_source = "model/wind/main.py:129";
  return r;
}

std::string Lr(double lr) { return absl::StrFormat("%.3g", lr); }

// Fills `opt` from `recipe` where unset and, when it sets the rate, says
// how in `rule` (a rate already there, given or from an earlier
// normalisation, keeps its rule).
void FillOptimizer(const RecipeOptimizer& recipe, const PaperRecipe& paper, int64_t batch,
                   OptimizerConfig* opt, std::string* rule) {
  if (opt->type() == OPTIMIZER_UNSPECIFIED) {
    opt->set_type(recipe.type);
    if (opt->weight_decay() == 0) opt->set_weight_decay(recipe.weight_decay);
  }
  if (opt->learning_rate() != 0) return;
  const double lr = ScaleLearningRate(recipe.learning_rate, paper.batch_size, batch);
  opt->set_learning_rate(lr);
  *rule = absl::StrCat("the paper's ", paper.preset, " recipe (", kPaperCodeRepo, " ",
                       recipe.source, "): ", Lr(recipe.learning_rate), " at batch ",
                       paper.batch_size);
  if (batch != paper.batch_size) {
    absl::StrAppend(rule, "; at batch ", batch, " x sqrt(", batch, "/", paper.batch_size, ") = ",
                    Lr(lr),
                    " (square-root scaling for Adam-family optimizers, Malladi et al., "
                    "NeurIPS 2022)");
  }
}

}  // namespace

const std::vector<PaperRecipe>& PaperRecipes() {
  static const std::vector<PaperRecipe>* recipes = new std::vector<PaperRecipe>(MakeRecipes());
  return *recipes;
}

const PaperRecipe* FindPaperRecipe(absl::string_view preset) {
  for (const PaperRecipe& r : PaperRecipes()) {
    if (preset == r.preset) return &r;
  }
  return nullptr;
}

double ScaleLearningRate(double lr, int64_t from, int64_t to) {
  if (from <= 0 || to <= 0 || from == to) return lr;
  return lr * std::sqrt(double(to) / double(from));
}

void ApplyPaperRecipe(const std::string& preset, TrainingSpec* t, HptSpec* h) {
  const PaperRecipe* recipe = FindPaperRecipe(preset);
  if (recipe == nullptr) return;
  if (t->epochs() == 0) t->set_epochs(recipe->epochs);
  if (t->batch_size() == 0) t->set_batch_size(recipe->batch_size);
  FillOptimizer(recipe->full, *recipe, t->batch_size(), t->mutable_optimizer(),
                t->mutable_learning_rate_rule());
  if (t->step_lr_step_size() == 0 && t->step_lr_gamma() == 0) {
    t->set_step_lr_step_size(recipe->step_lr_step_size);
    t->set_step_lr_gamma(recipe->step_lr_gamma);
  }
  FillOptimizer(recipe->lora, *recipe, t->batch_size(), h->mutable_lora_optimizer(),
                h->mutable_lora_learning_rate_rule());
}

void DefaultLoraOptimizer(const TrainingSpec& t, HptSpec* h) {
  OptimizerConfig& lora = *h->mutable_lora_optimizer();
  if (lora.type() == OPTIMIZER_UNSPECIFIED) {
    lora.set_type(t.optimizer().type());
    if (lora.weight_decay() == 0) lora.set_weight_decay(t.optimizer().weight_decay());
  }
  if (lora.learning_rate() == 0) {
    lora.set_learning_rate(t.optimizer().learning_rate());
    if (h->lora_learning_rate_rule().empty()) {
      h->set_lora_learning_rate_rule("the full phase's initial rate");
    }
  }
  if (lora.beta1() == 0) lora.set_beta1(t.optimizer().beta1());
  if (lora.beta2() == 0) lora.set_beta2(t.optimizer().beta2());
  if (lora.eps() == 0) lora.set_eps(t.optimizer().eps());
}

double PaperEpochs(const std::string& preset) {
  const PaperRecipe* r = FindPaperRecipe(preset);
  return r == nullptr ? 0 : r->epochs;  // presets of ours (tiny): the job's own
}

int64_t PaperWindow(const std::string& preset) {
  const PaperRecipe* r = FindPaperRecipe(preset);
  return r == nullptr ? 10 : r->window_samples;  // tiny: tests and the demo
}

int32_t PaperWeightLayer(const std::string& preset, int32_t layers) {
  const PaperRecipe* r = FindPaperRecipe(preset);
  return r != nullptr && r->weight_layer_last ? std::max(0, layers - 1) : 0;
}

}  // namespace hpt
