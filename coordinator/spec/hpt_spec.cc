#include "coordinator/spec/hpt_spec.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/device_kind.h"
#include "common/status_macros.h"
#include "coordinator/spec/hpt_defaults.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/spec/paper_recipes.h"
#include "coordinator/spec/spec_checks.h"
#include "models/lora_config.h"

namespace hpt {
namespace {

constexpr int64_t kMaxWindowSamples = 1'000'000'000;
// The fewest steps a check window spans: the trial that follows a check
// lasts one window, and its t-test needs at least 3 losses a side
// (phase_controller.h kMinTrialSamples).
constexpr int64_t kMinWindowSteps = 3;

// The check window: k samples (the paper's unit), or whole steps; a
// normalised spec has both.
absl::Status NormalizeCheckWindow(HptSpec& h, const std::string& preset, int64_t batch,
                                  std::vector<std::string>* notes) {
  for (auto [field, value] : {std::pair<const char*, int64_t>{"hpt.check_window_samples", h.check_window_samples()},
                               {"hpt.check_window_steps", h.check_window_steps()}}) {
    if (value < 0 || value > kMaxWindowSamples) {
      return Invalid(field, absl::StrCat("must be in 1..", kMaxWindowSamples, ", got ", value));
    }
  }
  if (h.check_window_steps() > 0) {
    // Both given (a normalised spec has both): they must agree, k samples
    // spanning exactly check_window_steps steps.
    if (h.check_window_samples() > 0 &&
        (h.check_window_samples() + batch - 1) / batch != h.check_window_steps()) {
      return Invalid("hpt.check_window_steps",
                     absl::StrCat(h.check_window_steps(), " steps and hpt.check_window_samples ",
                                  h.check_window_samples(), " disagree at batch ", batch,
                                  "; give one"));
    }
    if (h.check_window_samples() == 0) {
      if (h.check_window_steps() > kMaxWindowSamples / batch) {
        return Invalid("hpt.check_window_steps",
                       absl::StrCat(h.check_window_steps(), " steps at batch ", batch,
                                    " are over ", kMaxWindowSamples, " samples"));
      }
      h.set_check_window_samples(h.check_window_steps() * batch);
    }
  } else {
    if (h.check_window_samples() == 0) h.set_check_window_samples(PaperWindow(preset));
    h.set_check_window_steps((h.check_window_samples() + batch - 1) / batch);
  }
  if (h.check_window_steps() < kMinWindowSteps) {
    notes->push_back(absl::StrCat(
        "hpt.check_window: ", h.check_window_samples(), " samples = ", h.check_window_steps(),
        h.check_window_steps() == 1 ? " step" : " steps", " at batch ", batch,
        " rounded up to ", kMinWindowSteps, " steps (", kMinWindowSteps * batch,
        " samples): a trial lasts one window, and its t-test needs at least ", kMinWindowSteps,
        " losses a side"));
    h.set_check_window_steps(kMinWindowSteps);
    h.set_check_window_samples(kMinWindowSteps * batch);
  }
  return absl::OkStatus();
}

// The phase controller's tests: thresholds, the t-test's alpha, the
// layer whose weights the weight test tracks.
absl::Status NormalizeChecks(HptSpec& h, const ModelSpec& model, const ModelConfig& preset) {
  if (h.loss_threshold() == 0) h.set_loss_threshold(0.1);
  if (h.weight_threshold() == 0) h.set_weight_threshold(0.01);
  if (h.alpha() == 0) h.set_alpha(0.01);
  if (!(h.loss_threshold() > 0) || !(h.weight_threshold() > 0)) {
    return Invalid("hpt.loss_threshold", "thresholds must be positive");
  }
  RETURN_IF_ERROR(CheckRange("hpt.loss_threshold", h.loss_threshold(), 0, 1e9));
  RETURN_IF_ERROR(CheckRange("hpt.weight_threshold", h.weight_threshold(), 0, 1e9));
  if (!(h.alpha() > 0 && h.alpha() < 1)) {
    return Invalid("hpt.alpha", absl::StrCat("must be in (0, 1), got ", h.alpha()));
  }
  const int32_t layers = model.num_layers() > 0 ? model.num_layers() : preset.num_layers();
  if (h.weight_layer() == 0 && !h.weight_layer_set()) {
    h.set_weight_layer(PaperWeightLayer(model.preset(), layers));
  }
  h.set_weight_layer_set(true);
  if (h.weight_layer() < 0 || h.weight_layer() >= layers) {
    return Invalid("hpt.weight_layer", absl::StrCat("must be in [0, ", layers,
                                                    "), got ", h.weight_layer()));
  }
  return absl::OkStatus();
}

// The adapter: LoRA's defaults, and a rank the layers can hold.
absl::Status NormalizeLora(HptSpec& h, const ModelSpec& model, const ModelConfig& preset) {
  if (!h.lora().layers().empty()) {
    return Invalid("hpt.lora.layers",
                   "is the trainer's own (the layers switch_rule layerwise has switched): "
                   "leave it empty");
  }
  LoraConfig lora = h.lora();
  // Layer by layer, each layer's adapter takes its own rank from its own
  // change (PreLoRA's per-module rank), unless the spec names one rank.
  if (h.switch_rule() == SwitchRule::layerwise && lora.rank() == 0) lora.set_auto_rank(true);
  lora = LoraDefaults(lora);
  lora.set_enabled(true);
  if (absl::Status s = ValidateLoraConfig(lora); !s.ok()) return s;
  // An adapter's rank cannot exceed the width of the layers it adapts (q
  // and v are d_model x d_model).
  const int32_t width = model.d_model() > 0 ? model.d_model() : preset.d_model();
  if (!lora.auto_rank() && lora.rank() > width) {
    return Invalid("hpt.lora.rank", absl::StrCat(lora.rank(), " is above the layers' width (d_model ",
                                                 width, ")"));
  }
  *h.mutable_lora() = lora;
  return absl::OkStatus();
}

absl::Status NormalizeSwitchRule(HptSpec& h) {
  RETURN_IF_ERROR(CheckEnum("hpt.switch_rule", h.switch_rule(), SwitchRule::Name_descriptor()));
  RETURN_IF_ERROR(CheckEnum("hpt.trial_test", h.trial_test(), TrialTest::Name_descriptor()));
  // The default is a pair: a job that names a rule but no trial test keeps
  // the paper's trial, so "paper" still means the paper's rule.
  if (h.switch_rule() == SwitchRule::SWITCH_RULE_UNSPECIFIED) {
    h.set_switch_rule(kDefaultSwitchRule);
    if (h.trial_test() == TrialTest::TRIAL_TEST_UNSPECIFIED) h.set_trial_test(kDefaultTrialTest);
  }
  const SwitchRule::Name rule = h.switch_rule();
  if (rule == SwitchRule::layerwise) {
    // Each layer switches on its own weight test; no LoRA copy is tried.
    if (h.trial_test() == TrialTest::TRIAL_TEST_UNSPECIFIED) h.set_trial_test(TrialTest::none);
    if (h.trial_test() != TrialTest::none) {
      return Invalid("hpt.trial_test",
                     absl::StrCat(TrialTest::Name_Name(h.trial_test()),
                                  " cannot go with switch_rule layerwise, which runs no trial: "
                                  "leave trial_test unset or none"));
    }
  }
  if (rule == SwitchRule::consecutive && h.consecutive_checks() == 0) {
    h.set_consecutive_checks(kDefaultConsecutiveChecks);
  }
  if (h.consecutive_checks() < 0 || h.consecutive_checks() > 1000) {
    return Invalid("hpt.consecutive_checks",
                   absl::StrCat("must be in 1..1000, got ", h.consecutive_checks()));
  }
  if (rule == SwitchRule::trend && h.trend_windows() == 0) {
    h.set_trend_windows(kDefaultTrendWindows);
  }
  if (h.trend_windows() != 0 && (h.trend_windows() < 3 || h.trend_windows() > 1000)) {
    return Invalid("hpt.trend_windows",
                   absl::StrCat("must be in 3..1000 (a line through fewer has no error), got ",
                                h.trend_windows()));
  }
  if (rule == SwitchRule::trend && h.trend_gain() == 0) h.set_trend_gain(kDefaultTrendGain);
  if (!std::isfinite(h.trend_gain()) || h.trend_gain() < 0 || h.trend_gain() >= 1) {
    return Invalid("hpt.trend_gain",
                   absl::StrCat("must be a fraction of the loss in (0, 1), got ", h.trend_gain()));
  }
  if (rule == SwitchRule::plateau && h.plateau_z() == 0) h.set_plateau_z(kDefaultPlateauZ);
  if (!std::isfinite(h.plateau_z()) || h.plateau_z() < 0 || h.plateau_z() > 100) {
    return Invalid("hpt.plateau_z",
                   absl::StrCat("must be in (0, 100] standard errors, got ", h.plateau_z()));
  }
  if (h.trial_test() == TrialTest::TRIAL_TEST_UNSPECIFIED) h.set_trial_test(kNamedRuleTrialTest);
  if (h.trial_test() == TrialTest::margin && h.trial_margin() == 0) {
    h.set_trial_margin(kDefaultTrialMargin);
  }
  if (!std::isfinite(h.trial_margin()) || h.trial_margin() < 0 || h.trial_margin() >= 1) {
    return Invalid("hpt.trial_margin",
                   absl::StrCat("must be a fraction of the loss in (0, 1), got ",
                                h.trial_margin()));
  }
  return absl::OkStatus();
}

// The switch rule, the LoRA phase's placement and its fallback.
absl::Status NormalizeSwitchAndPlacement(HptSpec& h) {
  RETURN_IF_ERROR(NormalizeSwitchRule(h));
  RETURN_IF_ERROR(CheckEnum("hpt.placement", h.placement(), Placement::Name_descriptor()));
  if (h.placement() == Placement::PLACEMENT_UNSPECIFIED) h.set_placement(Placement::paper);
  if (h.device_wait_s() == 0) h.set_device_wait_s(60);
  RETURN_IF_ERROR(CheckRange("hpt.device_wait_s", h.device_wait_s(), 0, 1e6));
  RETURN_IF_ERROR(CheckEnum("hpt.fallback_placement", h.fallback_placement(),
                            FallbackPlacement::Name_descriptor()));
  if (h.fallback_placement() == FallbackPlacement::FALLBACK_PLACEMENT_UNSPECIFIED) {
    h.set_fallback_placement(kDefaultFallbackPlacement);
  }
  // A probe's bound (workers/gpu/baseline_probe.cc's).
  if (h.probe_steps() < 0 || h.probe_steps() > 1000) {
    return Invalid("hpt.probe_steps",
                   absl::StrCat("must be in 0..1000 (0: no probe), got ", h.probe_steps()));
  }
  return absl::OkStatus();
}

// The interconnect between devices on the cost timeline.
absl::Status NormalizeInterconnect(HptSpec& h) {
  InterconnectSpec& link = *h.mutable_interconnect();
  if (link.bandwidth_gb_per_s() == 0) link.set_bandwidth_gb_per_s(32);
  if (link.latency_us() == 0) link.set_latency_us(1);
  if (link.energy_pj_per_byte() == 0) link.set_energy_pj_per_byte(80);
  if (!(link.bandwidth_gb_per_s() > 0) || link.latency_us() < 0 ||
      link.energy_pj_per_byte() < 0) {
    return Invalid("hpt.interconnect", "bandwidth must be positive, latency and energy "
                                       "not negative");
  }
  // Finite, and far past any real link: NVLink 4 is 900 GB/s, a PCIe hop a
  // microsecond, off-package wires ~10 pJ/bit (cost_timeline.h).
  RETURN_IF_ERROR(CheckRange("hpt.interconnect.bandwidth_gb_per_s", link.bandwidth_gb_per_s(),
                             1e-6, 1e6));
  RETURN_IF_ERROR(CheckRange("hpt.interconnect.latency_us", link.latency_us(), 0, 1e9));
  RETURN_IF_ERROR(CheckRange("hpt.interconnect.energy_pj_per_byte", link.energy_pj_per_byte(),
                             0, 1e9));
  return absl::OkStatus();
}

}  // namespace

std::string IgnoredLoraPhaseNote(const HptSpec& given, const HptSpec& normal) {
  if (normal.mode() != TrainingMode::full) return "";
  std::vector<std::string> names;
  if (given.placement() != Placement::PLACEMENT_UNSPECIFIED) names.push_back("hpt.placement");
  if (given.switch_rule() != SwitchRule::SWITCH_RULE_UNSPECIFIED)
    names.push_back("hpt.switch_rule");
  if (given.lora().rank() != 0 || given.lora().auto_rank()) names.push_back("hpt.lora.rank");
  if (given.lora().alpha() != 0) names.push_back("hpt.lora.alpha");
  if (given.lora_optimizer().learning_rate() != 0) {
    names.push_back("hpt.lora_optimizer.learning_rate");
  }
  if (names.empty()) return "";
  return absl::StrCat(absl::StrJoin(names, ", "),
                      ": hpt.mode full trains every parameter to the end, with no LoRA phase, so ",
                      names.size() > 1 ? "these have" : "it has", " no effect");
}

absl::Status SetRuleName(const std::string& name, HptSpec& h) {
  const size_t plus = name.find('+');
  const std::string rule = name.substr(0, plus);
  const std::string test = plus == std::string::npos ? "" : name.substr(plus + 1);
  SwitchRule::Name r = SwitchRule::SWITCH_RULE_UNSPECIFIED;
  TrialTest::Name t = TrialTest::TRIAL_TEST_UNSPECIFIED;
  if (!rule.empty()) RETURN_IF_ERROR(ParseEnumName("hpt.switch_rule", rule, &r));
  if (!test.empty()) RETURN_IF_ERROR(ParseEnumName("hpt.trial_test", test, &t));
  h.set_switch_rule(r);
  h.set_trial_test(t);
  return absl::OkStatus();
}

std::string RuleName(const HptSpec& h) {
  const SwitchRule::Name rule =
      h.switch_rule() == SwitchRule::SWITCH_RULE_UNSPECIFIED ? kDefaultSwitchRule : h.switch_rule();
  const std::string name = SwitchRule::Name_Name(rule);
  if (rule == SwitchRule::layerwise) return name;  // never a trial
  const TrialTest::Name test = h.trial_test();
  return test == TrialTest::difference || test == TrialTest::TRIAL_TEST_UNSPECIFIED
             ? name
             : absl::StrCat(name, "+", TrialTest::Name_Name(test));
}

absl::Status NormalizeHpt(HptSpec& h, const ModelSpec& model, const ModelConfig& preset,
                          const TrainingSpec& t, const PlacementSpec& p,
                          std::vector<std::string>* notes) {
  RETURN_IF_ERROR(CheckEnum("hpt.mode", h.mode(), TrainingMode::Name_descriptor()));
  if (h.mode() == TrainingMode::TRAINING_MODE_UNSPECIFIED) {
    h.set_mode(p.head_device() == DeviceKind::gpu ? TrainingMode::hpt : TrainingMode::full);
  }
  if (h.mode() == TrainingMode::hpt && p.head_device() != DeviceKind::gpu) {
    return Invalid("hpt.mode",
                   absl::StrCat("hpt moves the whole model at the switch; placement.head_device '",
                                KindName(p.head_device()), "' needs hpt.mode full"));
  }
  std::vector<std::string> window_notes;
  RETURN_IF_ERROR(NormalizeCheckWindow(h, model.preset(), t.batch_size(), &window_notes));
  // A full-parameter job never checks: its window is never used.
  if (h.mode() == TrainingMode::hpt)
    notes->insert(notes->end(), window_notes.begin(), window_notes.end());
  RETURN_IF_ERROR(NormalizeChecks(h, model, preset));
  RETURN_IF_ERROR(NormalizeLora(h, model, preset));
  RETURN_IF_ERROR(NormalizeSwitchAndPlacement(h));
  RETURN_IF_ERROR(NormalizeInterconnect(h));
  if (h.project_epochs() == 0) {
    const double paper = PaperEpochs(model.preset());
    h.set_project_epochs(paper > 0 ? paper : double(t.epochs()));
  }
  if (!(h.project_epochs() > 0) || h.project_epochs() > 100000) {
    return Invalid("hpt.project_epochs",
                   absl::StrCat(h.project_epochs(), " is not in (0, 100000]"));
  }
  if (h.reram_chip_tiles() < 0 || h.reram_chip_tiles() > 10'000'000) {
    return Invalid("hpt.reram_chip_tiles",
                   absl::StrCat(h.reram_chip_tiles(), " is not in 0..10000000 (0: ISAAC's 1008)"));
  }
  return absl::OkStatus();
}

}  // namespace hpt
