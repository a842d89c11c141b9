#include "coordinator/job_spec.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "coordinator/paper_recipes.h"
#include "coordinator/spec_names.h"
#include "models/lora_config.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "models/model_config.h"
#include "models/model_flops.h"

namespace hpt {
namespace {

// Bounds on what one job may ask for.
constexpr int kMaxDModel = 8192;
constexpr int kMaxLayers = 256;
constexpr int kMaxHeads = 1024;
constexpr int kMaxFfMultiplier = 64;
constexpr int kMaxEpochs = 100'000;
constexpr int kMaxBatch = 1 << 16;
constexpr size_t kMaxNameBytes = 256;
constexpr int64_t kMaxWindowSamples = 1'000'000'000;
// Checkpoints: often enough that a failover replays little, seldom enough
// that snapshots (a few RPCs and a file) stay a small share of the steps.
constexpr int kDefaultCheckpointEvery = 100;
constexpr int kDefaultCheckpointsKept = 3;
constexpr int kMaxCheckpointsKept = 1000;
// Weights, gradients and Adam's two moments in fp32, on one worker.
constexpr double kMaxTrainingBytes = 64.0 * (int64_t{1} << 30);

class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (error_.empty()) {
      error_ = absl::StrCat("job spec line ", line + 1, " column ", column + 1,
                            ": ", message);
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

absl::Status Invalid(const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " ", why));
}

// An enum field's value must be one of its type's names (a binary spec can
// carry any number).
absl::Status CheckEnum(const std::string& field, int value,
                       const google::protobuf::EnumDescriptor* type) {
  if (type->FindValueByNumber(value) != nullptr) return absl::OkStatus();
  std::vector<std::string> names;
  for (int i = 0; i < type->value_count(); ++i) names.push_back(type->value(i)->name());
  return Invalid(field, absl::StrCat(value, " is not one of ", absl::StrJoin(names, ", ")));
}

// A number that must be finite and within [lowest, highest].
absl::Status CheckRange(const std::string& field, double value, double lowest,
                        double highest) {
  if (std::isfinite(value) && value >= lowest && value <= highest) return absl::OkStatus();
  return Invalid(field, absl::StrCat("must be a number in [", lowest, ", ", highest, "], got ",
                                     value));
}

}  // namespace

absl::StatusOr<JobSpec> ParseJobSpecText(const std::string& text) {
  JobSpec spec;
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  // Renaming keeps every line where it was, so an error's line still
  // points into the text as written.
  if (!parser.ParseFromString(UpgradeJobSpecText(text), &spec)) {
    return absl::InvalidArgumentError(
        errors.error().empty() ? "job spec is not valid text format"
                               : errors.error());
  }
  return spec;
}

namespace {

absl::StatusOr<ModelConfig> NormalizeModel(ModelSpec& model) {
  if (model.preset().empty()) model.set_preset("tiny");
  absl::StatusOr<ModelConfig> preset = PresetModelConfig(model.preset());
  if (!preset.ok()) return preset.status();
  // Upper bounds: far past any model the paper trains (12 x 512), and
  // small enough that a typo cannot ask a worker for terabytes.
  for (auto [field, value, most] : std::initializer_list<std::tuple<const char*, int, int>>{
           {"d_model", model.d_model(), kMaxDModel},
           {"num_layers", model.num_layers(), kMaxLayers},
           {"num_heads", model.num_heads(), kMaxHeads},
           {"ff_multiplier", model.ff_multiplier(), kMaxFfMultiplier}}) {
    if (value < 0) {
      return Invalid(absl::StrCat("model.", field),
                     absl::StrCat("must be positive (0 keeps the preset), got ",
                                  value));
    }
    if (value > most) {
      return Invalid(absl::StrCat("model.", field),
                     absl::StrCat("must be at most ", most, ", got ", value));
    }
  }
  return *preset;
}

absl::Status NormalizeData(DataSpec& data) {
  if (data.input_steps() == 0) data.set_input_steps(12);
  if (data.horizon() == 0) data.set_horizon(1);
  if (data.input_steps() < 0) {
    return Invalid("data.input_steps",
                   absl::StrCat("must be positive, got ", data.input_steps()));
  }
  if (data.horizon() < 0) {
    return Invalid("data.horizon", absl::StrCat("must be positive, got ", data.horizon()));
  }
  if (data.source_case() == DataSpec::SOURCE_NOT_SET) data.mutable_synthetic();
  if (data.has_synthetic()) {
    SyntheticData& s = *data.mutable_synthetic();
    if (s.stations() == 0) s.set_stations(16);
    if (s.time_steps() == 0) s.set_time_steps(512);
    if (s.seed() == 0) s.set_seed(7);
    if (s.noise() == 0) s.set_noise(0.05);
    if (s.stations() < 1) {
      return Invalid("data.synthetic.stations",
                     absl::StrCat("must be positive, got ", s.stations()));
    }
    if (s.time_steps() < 1) {
      return Invalid("data.synthetic.time_steps",
                     absl::StrCat("must be positive, got ", s.time_steps()));
    }
    if (s.noise() < 0) {
      return Invalid("data.synthetic.noise",
                     absl::StrCat("must not be negative, got ", s.noise()));
    }
  } else if (data.has_weather()) {
    if (data.weather().dir().empty()) return Invalid("data.weather.dir", "is empty");
    if (data.weather().test_year() < 0) {
      return Invalid("data.weather.test_year", "must be a year");
    }
  } else if (data.has_swe()) {
    SweData& s = *data.mutable_swe();
    if (s.stations_csv().empty()) return Invalid("data.swe.stations_csv", "is empty");
    if (s.days() == 0) s.set_days(3 * 365);
    if (s.seed() == 0) s.set_seed(7);
    if (s.days() < 2 * 365 || s.days() > 100 * 365) {
      return Invalid("data.swe.days",
                     absl::StrCat("must be 730..36500 (a water year tests), got ", s.days()));
    }
  } else if (data.has_covid()) {
    if (data.covid().path().empty()) return Invalid("data.covid.path", "is empty");
    if (data.covid().group_stride() < 0) {
      return Invalid("data.covid.group_stride", absl::StrCat("must be positive, got ",
                                                             data.covid().group_stride()));
    }
    if (data.covid().counties() < 0) {
      return Invalid("data.covid.counties", absl::StrCat("must be positive, got ",
                                                         data.covid().counties()));
    }
  } else {
    const CsvData& c = data.csv();
    if (c.path().empty()) return Invalid("data.csv.path", "is empty");
    RETURN_IF_ERROR(CheckEnum("data.csv.header", c.header(), CsvData::Header_descriptor()));
    for (auto [field, value] : std::initializer_list<std::pair<const char*, int64_t>>{
             {"train_begin_row", c.train_begin_row()},
             {"train_end_row", c.train_end_row()},
             {"test_begin_row", c.test_begin_row()},
             {"test_end_row", c.test_end_row()}}) {
      if (value < 0) {
        return Invalid(absl::StrCat("data.csv.", field),
                       absl::StrCat("must not be negative, got ", value));
      }
    }
  }
  return absl::OkStatus();
}

// An optimizer's fields, named under `field` (training.optimizer, or
// hpt.lora_optimizer).
absl::Status ValidateOptimizer(const std::string& field, const OptimizerConfig& opt) {
  RETURN_IF_ERROR(CheckEnum(field + ".type", opt.type(), OptimizerType_descriptor()));
  if (!(opt.learning_rate() > 0) || !std::isfinite(opt.learning_rate())) {
    return Invalid(field + ".learning_rate",
                   absl::StrCat("must be a positive number, got ",
                                opt.learning_rate()));
  }
  if (!(opt.weight_decay() >= 0) || !std::isfinite(opt.weight_decay())) {
    return Invalid(field + ".weight_decay",
                   absl::StrCat("must be a number >= 0, got ", opt.weight_decay()));
  }
  // 0 keeps Adam's defaults (0.9, 0.999, 1e-8).
  for (auto [name, value] : std::initializer_list<std::pair<const char*, double>>{
           {"beta1", opt.beta1()}, {"beta2", opt.beta2()}}) {
    if (!(value >= 0 && value < 1)) {
      return Invalid(absl::StrCat(field, ".", name),
                     absl::StrCat("must be in [0, 1), got ", value));
    }
  }
  if (!(opt.eps() >= 0) || !std::isfinite(opt.eps())) {
    return Invalid(field + ".eps",
                   absl::StrCat("must be a number >= 0 (0: 1e-8), got ", opt.eps()));
  }
  return absl::OkStatus();
}

absl::Status NormalizeTraining(TrainingSpec& t) {
  if (t.epochs() == 0) t.set_epochs(3);
  if (t.batch_size() == 0) t.set_batch_size(16);
  if (t.seed() == 0) t.set_seed(42);
  if (t.step_lr_gamma() == 0) t.set_step_lr_gamma(0.5);
  OptimizerConfig& opt = *t.mutable_optimizer();
  RETURN_IF_ERROR(
      CheckEnum("training.optimizer.type", opt.type(), OptimizerType_descriptor()));
  if (opt.type() == OPTIMIZER_UNSPECIFIED) opt.set_type(ADAM);
  if (opt.learning_rate() == 0) opt.set_learning_rate(1e-3);
  if (t.epochs() < 0 || t.epochs() > kMaxEpochs) {
    return Invalid("training.epochs",
                   absl::StrCat("must be in 1..", kMaxEpochs, ", got ", t.epochs()));
  }
  if (t.eval_batch_size() < 0 || t.eval_batch_size() > kMaxBatch) {
    return Invalid("training.eval_batch_size",
                   absl::StrCat("must be in 0..", kMaxBatch, " (0: automatic), got ",
                                t.eval_batch_size()));
  }
  if (t.max_test_samples() < 0) {
    return Invalid("training.max_test_samples",
                   absl::StrCat("must not be negative, got ", t.max_test_samples()));
  }
  if (t.batch_size() < 0 || t.batch_size() > kMaxBatch) {
    return Invalid("training.batch_size",
                   absl::StrCat("must be in 1..", kMaxBatch, ", got ", t.batch_size()));
  }
  RETURN_IF_ERROR(ValidateOptimizer("training.optimizer", opt));
  if (t.step_lr_step_size() < 0) {
    return Invalid("training.step_lr_step_size",
                   absl::StrCat("must not be negative, got ", t.step_lr_step_size()));
  }
  if (!(t.step_lr_gamma() > 0 && t.step_lr_gamma() <= 1)) {
    return Invalid("training.step_lr_gamma",
                   absl::StrCat("must be in (0, 1], got ", t.step_lr_gamma()));
  }
  if (t.max_steps_per_epoch() < 0) {
    return Invalid("training.max_steps_per_epoch",
                   absl::StrCat("must not be negative, got ", t.max_steps_per_epoch()));
  }
  if (t.checkpoint_every() == 0) t.set_checkpoint_every(kDefaultCheckpointEvery);
  if (t.checkpoint_every() < 0) t.set_checkpoint_every(-1);  // only at the switch
  if (t.checkpoints_kept() == 0) t.set_checkpoints_kept(kDefaultCheckpointsKept);
  if (t.checkpoints_kept() < 0 || t.checkpoints_kept() > kMaxCheckpointsKept) {
    return Invalid("training.checkpoints_kept",
                   absl::StrCat("must be in 1..", kMaxCheckpointsKept, ", got ",
                                t.checkpoints_kept()));
  }
  return absl::OkStatus();
}

absl::Status NormalizePlacement(PlacementSpec& p, const TrainingSpec& t) {
  if (p.gpu_workers() == 0) p.set_gpu_workers(1);
  if (p.gpu_workers() < 0) {
    return Invalid("placement.gpu_workers",
                   absl::StrCat("must be positive, got ", p.gpu_workers()));
  }
  if (p.head_device().empty()) p.set_head_device("gpu");
  if (p.head_device() != "gpu" && p.head_device() != "reram" &&
      p.head_device() != "systolic") {
    return Invalid("placement.head_device",
                   absl::StrCat("'", p.head_device(), "' is not gpu, reram or systolic"));
  }
  if (p.head_device() != "gpu" && p.gpu_workers() > 1) {
    return Invalid("placement.head_device",
                   absl::StrCat("'", p.head_device(),
                                "' needs placement.gpu_workers 1 (a head on another "
                                "device is not data-parallel), got ",
                                p.gpu_workers()));
  }
  if (t.batch_size() < p.gpu_workers()) {
    return Invalid("training.batch_size",
                   absl::StrCat("(", t.batch_size(),
                                ") must be at least placement.gpu_workers (",
                                p.gpu_workers(), ")"));
  }
  return absl::OkStatus();
}

// The check window: k samples (the paper's unit), or whole steps; a
// normalised spec has both.
absl::Status NormalizeCheckWindow(HptSpec& h, const std::string& preset, int64_t batch) {
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
  return absl::OkStatus();
}

absl::Status NormalizeHpt(HptSpec& h, const ModelSpec& model, const ModelConfig& preset,
                          const TrainingSpec& t, const PlacementSpec& p) {
  if (h.mode().empty()) h.set_mode(p.head_device() == "gpu" ? "hpt" : "full");
  if (h.mode() != "hpt" && h.mode() != "full") {
    return Invalid("hpt.mode", absl::StrCat("'", h.mode(), "' is not hpt or full"));
  }
  if (h.mode() == "hpt" && p.head_device() != "gpu") {
    return Invalid("hpt.mode", absl::StrCat(
        "hpt moves the whole model at the switch; placement.head_device '",
        p.head_device(), "' needs hpt.mode full"));
  }
  RETURN_IF_ERROR(NormalizeCheckWindow(h, model.preset(), t.batch_size()));
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
  LoraConfig lora = LoraDefaults(h.lora());
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
  if (h.switch_rule().empty()) h.set_switch_rule("paper");
  if (h.switch_rule() != "paper" && h.switch_rule() != "consecutive") {
    return Invalid("hpt.switch_rule",
                   absl::StrCat("'", h.switch_rule(), "' is not paper or consecutive"));
  }
  if (h.switch_rule() == "consecutive" && h.consecutive_checks() == 0) h.set_consecutive_checks(3);
  if (h.consecutive_checks() < 0 || h.consecutive_checks() > 1000) {
    return Invalid("hpt.consecutive_checks",
                   absl::StrCat("must be in 1..1000, got ", h.consecutive_checks()));
  }
  if (h.placement().empty()) h.set_placement("paper");
  if (h.placement() != "paper" && h.placement() != "gpu" && h.placement() != "reram_full") {
    return Invalid("hpt.placement",
                   absl::StrCat("'", h.placement(), "' is not paper, gpu or reram_full"));
  }
  if (h.device_wait_s() == 0) h.set_device_wait_s(60);
  RETURN_IF_ERROR(CheckRange("hpt.device_wait_s", h.device_wait_s(), 0, 1e6));
  if (h.fallback_placement().empty()) h.set_fallback_placement("gpu");
  if (h.fallback_placement() != "gpu" && h.fallback_placement() != "fail") {
    return Invalid("hpt.fallback_placement",
                   absl::StrCat("'", h.fallback_placement(), "' is not gpu or fail"));
  }
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

}  // namespace

absl::StatusOr<JobSpec> NormalizeJobSpec(JobSpec spec) {
  ASSIGN_OR_RETURN(const ModelConfig preset, NormalizeModel(*spec.mutable_model()));
  RETURN_IF_ERROR(NormalizeData(*spec.mutable_data()));
  ApplyPaperRecipe(spec.model().preset(), spec.mutable_training(), spec.mutable_hpt());
  RETURN_IF_ERROR(NormalizeTraining(*spec.mutable_training()));
  DefaultLoraOptimizer(spec.training(), spec.mutable_hpt());
  RETURN_IF_ERROR(ValidateOptimizer("hpt.lora_optimizer", spec.hpt().lora_optimizer()));
  RETURN_IF_ERROR(NormalizePlacement(*spec.mutable_placement(), spec.training()));
  RETURN_IF_ERROR(NormalizeHpt(*spec.mutable_hpt(), spec.model(), preset, spec.training(),
                               spec.placement()));
  const ModelSpec& model = spec.model();
  if (spec.name().empty()) spec.set_name(model.preset());
  if (spec.name().size() > kMaxNameBytes) {
    return Invalid("name", absl::StrCat("is ", spec.name().size(), " bytes; at most ",
                                        kMaxNameBytes));
  }
  return spec;
}

absl::StatusOr<ModelConfig> ResolveModelConfig(const ModelSpec& spec,
                                               int64_t input_features,
                                               int64_t output_features) {
  absl::StatusOr<ModelConfig> config = PresetModelConfig(spec.preset());
  if (!config.ok()) return config.status();
  if (spec.d_model() > 0) {
    config->set_d_model(spec.d_model());
    config->set_reduction_dim(std::max(1, spec.d_model() / 2));
  }
  if (spec.num_layers() > 0) config->set_num_layers(spec.num_layers());
  if (spec.num_heads() > 0) config->set_num_heads(spec.num_heads());
  if (spec.ff_multiplier() > 0) config->set_ff_multiplier(spec.ff_multiplier());
  if (spec.dropout_set()) config->set_dropout(spec.dropout());
  config->set_input_features(static_cast<int32_t>(input_features));
  config->set_output_features(static_cast<int32_t>(output_features));
  if (absl::Status s = ValidateModelConfig(*config); !s.ok()) return s;
  const double bytes = 16.0 * double(ParameterCount(*config, /*encoder_only=*/false));
  if (bytes > kMaxTrainingBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model: %.1f GiB of fp32 weights, gradients and Adam moments is over the %.0f GiB "
        "a worker may be asked for; lower model.d_model or model.num_layers",
        bytes / double(int64_t{1} << 30), kMaxTrainingBytes / double(int64_t{1} << 30)));
  }
  return config;
}

void ForceEarlySwitch(HptSpec* h) {
  h->set_check_window_steps(2);
  h->set_loss_threshold(1e9);
  h->set_weight_threshold(1e9);
  h->set_trial_on_rising_loss(true);
  h->set_alpha(1e-9);
}

}  // namespace hpt
