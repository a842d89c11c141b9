#include "coordinator/spec/job_spec.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/device_kind.h"
#include "common/likely_names.h"
#include "common/status_macros.h"
#include "coordinator/spec/hpt_spec.h"
#include "coordinator/spec/paper_recipes.h"
#include "coordinator/spec/spec_checks.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "models/lora_config.h"
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
// Checkpoints: often enough that a failover replays little, seldom enough
// that snapshots (a few RPCs and a file) stay a small share of the steps.
constexpr int kDefaultCheckpointEvery = 100;
// The validation share training.select: best_validation takes when the
// data gives none: about a tenth of the training rows, the held-out share
// a time-series split commonly keeps (and never over half of a range,
// CarveValidation).
constexpr double kSelectionValidationShare = 0.1;
constexpr int kDefaultCheckpointsKept = 3;
constexpr int kMaxCheckpointsKept = 1000;
// Weights, gradients and Adam's two moments in fp32, on one worker.
constexpr double kMaxTrainingBytes = 64.0 * (int64_t{1} << 30);

class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (error_.empty()) {
      line_ = line;
      column_ = column;
      message_ = message;
      error_ = absl::StrCat("job spec line ", line + 1, " column ", column + 1, ": ", message);
    }
  }
  const std::string& error() const { return error_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  std::string error_, message_;
  int line_ = 0, column_ = 0;
};

// The enum type of the first field named `name` anywhere in a JobSpec
// (breadth first); null where no enum field has that name.
const google::protobuf::EnumDescriptor* EnumFieldNamed(const std::string& name) {
  std::vector<const google::protobuf::Descriptor*> queue = {JobSpec::descriptor()};
  for (size_t i = 0; i < queue.size() && i < 256; ++i) {
    for (int f = 0; f < queue[i]->field_count(); ++f) {
      const google::protobuf::FieldDescriptor* field = queue[i]->field(f);
      if (field->name() == name && field->enum_type() != nullptr) return field->enum_type();
      if (field->message_type() != nullptr &&
          std::find(queue.begin(), queue.end(), field->message_type()) == queue.end()) {
        queue.push_back(field->message_type());
      }
    }
  }
  return nullptr;
}

// The 0-based column where `name` begins on the error's line, as the last
// whole word before the parser's column; the parser's column where it is
// not found there.
int NameColumn(const std::vector<std::string>& lines, const FirstErrorCollector& errors,
               const std::string& name) {
  if (errors.line() < 0 || errors.line() >= int(lines.size()) || name.empty()) {
    return errors.column();
  }
  const std::string& line = lines[size_t(errors.line())];
  auto word = [](char c) { return absl::ascii_isalnum(c) || c == '_'; };
  size_t end = std::min(line.size(), size_t(std::max(0, errors.column())));
  for (size_t at = line.rfind(name, end); at != std::string::npos;
       at = at == 0 ? std::string::npos : line.rfind(name, at - 1)) {
    const bool starts = at == 0 || !word(line[at - 1]);
    const bool ends = at + name.size() >= line.size() || !word(line[at + name.size()]);
    if (starts && ends && at + name.size() <= end) return int(at);
  }
  return errors.column();
}

// The text parser's error for an enum field, with the names it takes: a
// name it does not know, or a value in quotes. Other errors as they are.
std::string EnumParseError(const std::string& text, const FirstErrorCollector& errors) {
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  const std::string at =
      absl::StrCat("job spec line ", errors.line() + 1, " column ", errors.column() + 1, ": ");
  // Unknown enumeration value of "knee" for field "switch_rule".
  const std::vector<std::string> quoted = absl::StrSplit(errors.message(), '"');
  if (absl::StartsWith(errors.message(), "Unknown enumeration value of ") && quoted.size() >= 4) {
    if (const auto* type = EnumFieldNamed(quoted[3])) {
      return absl::StrCat(at, quoted[3], " '", quoted[1], "' is not ", AllowedNames(type));
    }
  }
  // Message type "hpt.TrainingSpec" has no field named "epoch".
  if (absl::StartsWith(errors.message(), "Message type ") && quoted.size() >= 4 &&
      absl::StrContains(quoted[2], "has no field named")) {
    if (const auto* type =
            google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(quoted[1])) {
      std::vector<std::string> fields;
      for (int f = 0; f < type->field_count(); ++f) fields.push_back(type->field(f)->name());
      const bool outer = type != JobSpec::descriptor() &&
                         JobSpec::descriptor()->FindFieldByName(quoted[3]) != nullptr;
      // The parser stands past the name (at its ':' or '{'): point at the name.
      const std::string where = absl::StrCat("job spec line ", errors.line() + 1, " column ",
                                             NameColumn(lines, errors, quoted[3]) + 1, ": ");
      return absl::StrCat(where, type->name(), " has no field '", quoted[3], "'",
                          outer ? " (it is a field of the whole spec: is a '}' missing before it?)"
                                : DidYouMean(quoted[3], fields),
                          "; its fields: ", absl::StrJoin(fields, ", "));
    }
  }
  // A quoted value: the field is the name before the colon on that line.
  if (errors.line() >= 0 && errors.line() < int(lines.size())) {
    const std::string& line = lines[size_t(errors.line())];
    absl::string_view before = absl::StripTrailingAsciiWhitespace(
        absl::string_view(line).substr(0, size_t(std::max(0, errors.column()))));
    if (absl::ConsumeSuffix(&before, ":")) {
      before = absl::StripTrailingAsciiWhitespace(before);
      size_t start = before.size();
      while (start > 0 && (absl::ascii_isalnum(before[start - 1]) || before[start - 1] == '_')) {
        --start;
      }
      const std::string field(before.substr(start));
      if (const auto* type = EnumFieldNamed(field)) {
        return absl::StrCat(at, field, " takes a name without quotes: ", AllowedNames(type));
      }
    }
  }
  return errors.error();
}

}  // namespace

absl::StatusOr<JobSpec> ParseJobSpecText(const std::string& text) {
  JobSpec spec;
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &spec)) {
    return absl::InvalidArgumentError(errors.error().empty() ? "job spec is not valid text format"
                                                             : EnumParseError(text, errors));
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
  if (data.missing().empty()) data.set_missing("refuse");
  if (data.missing() != "refuse" && data.missing() != "interpolate" &&
      data.missing() != "drop_rows") {
    return Invalid("data.missing", absl::StrCat("'", data.missing(),
                                                "' is not refuse, interpolate or drop_rows"));
  }
  RETURN_IF_ERROR(CheckRange("data.validation_share", data.validation_share(), 0, 0.5));
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
  RETURN_IF_ERROR(CheckEnum("training.precision", t.precision(), Precision::Name_descriptor()));
  if (t.precision() == Precision::PRECISION_UNSPECIFIED) t.set_precision(Precision::fp32);
  RETURN_IF_ERROR(CheckEnum("training.launch", t.launch(), Launch::Mode_descriptor()));
  RETURN_IF_ERROR(CheckEnum("training.select", t.select(), Selection::Mode_descriptor()));
  if (t.select() == Selection::SELECT_UNSPECIFIED) t.set_select(Selection::last);
  if (t.launch() == Launch::LAUNCH_UNSPECIFIED) t.set_launch(Launch::eager);
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
  RETURN_IF_ERROR(
      CheckEnum("placement.head_device", p.head_device(), DeviceKind::Name_descriptor()));
  if (p.head_device() == DeviceKind::DEVICE_KIND_UNSPECIFIED) p.set_head_device(DeviceKind::gpu);
  if (p.head_device() != DeviceKind::gpu && p.gpu_workers() > 1) {
    return Invalid("placement.head_device",
                   absl::StrCat("'", KindName(p.head_device()),
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

}  // namespace

absl::StatusOr<JobSpec> NormalizeJobSpec(JobSpec spec) {
  const bool no_data = spec.data().source_case() == DataSpec::SOURCE_NOT_SET;
  const bool no_preset = spec.model().preset().empty();
  ASSIGN_OR_RETURN(const ModelConfig preset, NormalizeModel(*spec.mutable_model()));
  RETURN_IF_ERROR(NormalizeData(*spec.mutable_data()));
  ApplyPaperRecipe(spec.model().preset(), spec.mutable_training(), spec.mutable_hpt());
  RETURN_IF_ERROR(NormalizeTraining(*spec.mutable_training()));
  if (spec.training().select() == Selection::best_validation &&
      spec.data().validation_share() == 0) {
    spec.mutable_data()->set_validation_share(kSelectionValidationShare);
  }
  DefaultLoraOptimizer(spec.training(), spec.mutable_hpt());
  RETURN_IF_ERROR(ValidateOptimizer("hpt.lora_optimizer", spec.hpt().lora_optimizer()));
  RETURN_IF_ERROR(NormalizePlacement(*spec.mutable_placement(), spec.training()));
  std::vector<std::string> notes;
  if (no_data) {
    const SyntheticData& s = spec.data().synthetic();
    notes.push_back(absl::StrCat(
        "data: no source given, so the job trains on a synthetic series (", s.stations(),
        " stations x ", s.time_steps(), " steps); give --csv, --weather_dir, --covid_csv or "
        "--swe_stations (data { ... } in a spec) for real data"));
  }
  // A data set the paper trains, with the small default model: the note
  // names the paper's model for it.
  const char* paper_preset = spec.data().has_weather() ? "weather"
                             : spec.data().has_covid() ? "covid"
                             : spec.data().has_swe()   ? "swe"
                                                       : nullptr;
  if (no_preset && paper_preset != nullptr) {
    notes.push_back(absl::StrCat(
        "model.preset: none given, so the small 'tiny' model trains; --preset=", paper_preset,
        " (model { preset: \"", paper_preset, "\" }) is the paper's ", paper_preset,
        " model with its training recipe"));
  }
  RETURN_IF_ERROR(NormalizeHpt(*spec.mutable_hpt(), spec.model(), preset, spec.training(),
                               spec.placement(), &notes));
  for (std::string& note : notes) spec.add_notes(std::move(note));
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
  if (spec.embedding_skip() != EmbeddingSkip::EMBEDDING_SKIP_UNSPECIFIED) {
    config->set_embedding_skip(spec.embedding_skip() == EmbeddingSkip::on);
  }
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
  h->set_check_window_steps(3);  // the fewest a window may span
  // A check passes unless the loss fell 100 standard errors in a window
  // (the paper's test also asks the drops to shrink, a coin toss here).
  h->set_switch_rule(SwitchRule::plateau);
  h->set_plateau_z(100);
  h->set_loss_threshold(1e9);
  h->set_weight_threshold(1e9);
  h->set_trial_on_rising_loss(true);
  h->set_alpha(1e-9);
}

}  // namespace hpt
