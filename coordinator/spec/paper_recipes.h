// What the paper's published code fixes for each of its four applications:
// the training recipe (optimizers of both phases, learning rates, weight
// decay, schedule, epochs, batch size) and the phase controller's window
// and tracked layer. Each value carries the line of the code it comes from,
// github.com/saimandahal/HpT at commit 62ccc4cb528f72c735e57df6cca39cce629a0b4e
// (2025-01-26). A job on one of these presets takes them as its defaults;
// `tiny` (ours) has no recipe and keeps the service's generic defaults.
//
// At a batch size other than the recipe's (1 everywhere), a learning rate
// the job did not give is scaled by the square root of the batch ratio:
// the rule Malladi et al. derive for Adam-family optimizers ("On the SDEs
// and Scaling Rules for Adaptive Gradient Algorithms", NeurIPS 2022), where
// SGD's linear rule would overshoot. The normalised spec says so in
// training.learning_rate_rule and hpt.lora_learning_rate_rule.
#ifndef HPT_COORDINATOR_SPEC_PAPER_RECIPES_H_
#define HPT_COORDINATOR_SPEC_PAPER_RECIPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/job_service.pb.h"

namespace hpt {

struct RecipeOptimizer {
  OptimizerType type = OPTIMIZER_UNSPECIFIED;
  double learning_rate = 0;
  double weight_decay = 0;
  const char* source = "";  // "model/wind/main.py:90"
};

struct PaperRecipe {
  const char* preset = "";
  int32_t epochs = 0;
  const char* epochs_source = "";
  int32_t batch_size = 0;
  const char* batch_source = "";
  RecipeOptimizer full;  // the full-parameter phase
  // StepLR on the full phase's optimizer, stepped once an epoch; 0: none.
  int32_t step_lr_step_size = 0;
  double step_lr_gamma = 1;
  const char* schedule_source = "";
  // The LoRA phase's optimizer: created afresh at the trial's start, with
  // no scheduler in any of the four scripts.
  RecipeOptimizer lora;
  int64_t window_samples = 0;  // the phase controller's k
  const char* window_source = "";
  bool weight_layer_last = false;  // the weight test's layer: last, or 0
  const char* weight_layer_source = "";
};

// The commit every `source` above refers to.
inline constexpr absl::string_view kPaperCodeCommit = "62ccc4cb528f72c735e57df6cca39cce629a0b4e";
inline constexpr absl::string_view kPaperCodeRepo = "github.com/saimandahal/HpT";

// The recipe of swe, weather, covid or wind; nullptr for other presets.
const PaperRecipe* FindPaperRecipe(absl::string_view preset);
const std::vector<PaperRecipe>& PaperRecipes();

// `lr` given for batch `from`, at batch `to`: lr * sqrt(to / from).
double ScaleLearningRate(double lr, int64_t from, int64_t to);

// Fills the training recipe's defaults for `preset` into a job's training
// and hpt sections (before their generic defaults): epochs, batch size,
// both phases' optimizers and the schedule, each only where the job left
// it unset. Records how each learning rate was set in the *_rule fields.
// For presets without a recipe, the LoRA phase's optimizer defaults to the
// full phase's.
void ApplyPaperRecipe(const std::string& preset, TrainingSpec* training, HptSpec* hpt);

// Fills the LoRA optimizer from the (normalised) training optimizer where
// still unset: presets without a recipe.
void DefaultLoraOptimizer(const TrainingSpec& training, HptSpec* hpt);

// The paper's epochs, window k and weight-test layer per preset (0, 10 and
// 0 for presets of ours).
double PaperEpochs(const std::string& preset);
int64_t PaperWindow(const std::string& preset);
int32_t PaperWeightLayer(const std::string& preset, int32_t layers);

}  // namespace hpt

#endif  // HPT_COORDINATOR_SPEC_PAPER_RECIPES_H_
