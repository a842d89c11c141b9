#include "hptctl/submit_flags.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/enum_names.h"
#include "common/status_macros.h"
#include "common/user_file.h"
#include "hptctl/job_format.h"

// Shared with sweep (defined in hptctl_main.cc).
ABSL_DECLARE_FLAG(std::string, target);

ABSL_FLAG(std::string, spec, "", "submit: job spec file (protobuf text format).");
ABSL_FLAG(std::string, name, "", "submit: job name.");
ABSL_FLAG(std::string, preset, "", "submit: model preset (tiny, swe, weather, covid, wind).");
ABSL_FLAG(int, d_model, 0, "submit: the model's width (0: the preset's).");
ABSL_FLAG(int, num_layers, 0, "submit: encoder layers (0: the preset's).");
ABSL_FLAG(int, heads, 0, "submit: attention heads, dividing d_model (0: the preset's).");
ABSL_FLAG(std::string, embedding_skip, "",
          "submit: on or off: whether the dimension reduction reads the input embedding "
          "beside the last layer (empty: the preset's; on for swe, weather, covid and wind).");
ABSL_FLAG(int, epochs, 0, "submit: epochs (0: spec or default 3).");
ABSL_FLAG(int, batch_size, 0, "submit: batch size (0: spec or default 16).");
ABSL_FLAG(double, lr, 0,
          "submit: learning rate (0: the preset's paper recipe scaled by sqrt(batch), or 1e-3).");
ABSL_FLAG(double, lora_lr, 0,
          "submit: the LoRA phase's learning rate (0: the preset's recipe, or --lr's).");
ABSL_FLAG(std::string, switch_rule, "",
          "submit: when a trial starts: paper, consecutive, trend or plateau; or layerwise "
          "(each layer switches alone on its weight test) (empty: the default, paper; "
          "docs/method.md \"Switch rules\").");
ABSL_FLAG(int, consecutive_checks, 0, "submit: passing checks in a row under consecutive (0: 3).");
ABSL_FLAG(int, trend_windows, 0, "submit: windows the trend rule's line runs through (0: 5).");
ABSL_FLAG(double, trend_gain, 0,
          "submit: the trend rule's bound on the loss left to gain, a fraction (0: 0.01).");
ABSL_FLAG(double, plateau_z, 0,
          "submit: the plateau rule's standard errors of a significant drop (0: 1.645).");
ABSL_FLAG(std::string, trial_test, "",
          "submit: how a trial ends: difference (the paper's t-test), margin or none (no trial) "
          "(empty: difference; none under layerwise; docs/method.md \"The trial\").");
ABSL_FLAG(double, trial_margin, 0,
          "submit: the margin test's allowed excess loss, a fraction (0: 0.05).");
ABSL_FLAG(std::string, optimizer, "", "submit: adam or adamw.");
ABSL_FLAG(std::string, precision, "",
          "submit: fp32 (default) or bf16 (GPU workers' forward under bf16 autocast).");
ABSL_FLAG(std::string, launch, "",
          "submit: eager (default) or graph (GPU workers capture each step shape as a CUDA "
          "graph and replay it; eager where they cannot, and the report says why).");
ABSL_FLAG(std::string, select, "",
          "submit: last (default: the weights after the last step) or best_validation (the "
          "epoch that scores best on a validation split, carved from the training rows).");
ABSL_FLAG(double, validation_share, 0,
          "submit: the share of the training rows held out to validate, the last before the "
          "test (0: none; best_validation alone takes 0.1; at most 0.5).");
ABSL_FLAG(int32_t, probe_steps, 0,
          "submit: after training, time the full step this many times under each GPU "
          "baseline (hpt.probe_steps; 0: no probe). probe: timed steps per baseline "
          "(0: 10).");
ABSL_FLAG(int, step_lr_step_size, 0, "submit: StepLR epochs per decay (0: constant).");
ABSL_FLAG(int, gpu_workers, 0, "submit: data-parallel GPU workers (0: 1).");
ABSL_FLAG(std::string, head_device, "",
          "submit: where the output head runs: gpu, reram or systolic.");
ABSL_FLAG(int, max_steps_per_epoch, 0, "submit: cap on steps per epoch.");
ABSL_FLAG(int, checkpoint_every, 0,
          "submit: a checkpoint every N steps (0: 100; -1: only at the phase switch).");
ABSL_FLAG(uint64_t, seed, 0, "submit: training seed.");
ABSL_FLAG(std::string, csv, "", "submit: wide CSV file, read by the coordinator.");
ABSL_FLAG(std::string, time_column, "",
          "submit: --csv's column of the rows' times (YYYY-MM-DD[ HH:MM[:SS]]); empty reads a "
          "first column of times as the time column; none: the file has none.");
ABSL_FLAG(std::string, train_rows, "",
          "submit: CSV training rows BEGIN:END[,BEGIN:END...] (e.g. 0:480,2120:8387).");
ABSL_FLAG(std::string, test_rows, "", "submit: CSV test rows BEGIN:END.");
ABSL_FLAG(std::string, missing, "",
          "submit: an empty CSV cell: refuse (default), interpolate or drop_rows.");
ABSL_FLAG(int, input_steps, 0,
          "submit: input steps per sample (the time steps a token's features span).");
ABSL_FLAG(int, horizon, 0, "submit: steps ahead to predict.");
ABSL_FLAG(int, stations, 0, "submit: synthetic stations.");
ABSL_FLAG(int, time_steps, 0, "submit: synthetic time steps.");
ABSL_FLAG(std::string, request_id, "", "submit: idempotency key.");
ABSL_FLAG(std::string, mode, "", "submit: hpt (default: switch to LoRA) or full.");
ABSL_FLAG(std::string, placement, "",
          "submit: LoRA-phase placement: paper (default), gpu or reram_full.");
ABSL_FLAG(int64_t, check_window_samples, 0,
          "submit: phase-controller check window k in samples, the paper's unit (0: the "
          "preset's: swe 365, covid 720, wind 480, weather 8000).");
ABSL_FLAG(int64_t, check_window_steps, 0, "submit: the check window in steps instead.");
ABSL_FLAG(double, project_epochs, 0,
          "submit: training length the report projects HpT and GPU-only to (0: the "
          "paper's epochs for the preset).");
ABSL_FLAG(double, loss_threshold, 0, "submit: loss-test threshold (0: 0.1).");
ABSL_FLAG(double, weight_threshold, 0, "submit: weight-test threshold (0: 0.01).");
ABSL_FLAG(double, alpha, 0, "submit: t-test significance (0: 0.01).");
ABSL_FLAG(int, weight_layer, -1,
          "submit: layer whose [W_q | W_v] the weight test tracks (-1: the preset's, the "
          "paper's: last for swe and weather, 0 otherwise).");
ABSL_FLAG(std::string, lora_rank, "", "submit: LoRA rank, or auto (default 8).");
ABSL_FLAG(double, lora_alpha, 0, "submit: LoRA alpha (0: 64).");
ABSL_FLAG(int64_t, reram_chip_tiles, 0,
          "submit: tiles of each ReRAM worker's chip; free ones hold copies of "
          "the frozen layers (0: ISAAC's 1008).");
ABSL_FLAG(std::string, weather_dir, "",
          "submit: AgWeatherNet station files (AWN_*.csv), read by the coordinator.");
ABSL_FLAG(int, test_year, 0, "submit: weather test year (0: 2020).");
ABSL_FLAG(std::string, covid_csv, "", "submit: county weekly COVID-19 CSV.");
ABSL_FLAG(std::string, swe_stations, "",
          "submit: SNOTEL station table (location, elevation, slope, aspect, land "
          "cover); the SWE series over them are synthetic.");
ABSL_FLAG(int, swe_days, 0, "submit: days of synthetic SWE (0: 1095, three water years).");
ABSL_FLAG(int, counties, 0, "submit: covid counties as tokens (0: 50).");

namespace hpt {
namespace {

// Whether any job flag (one that fills a spec) was given.
bool AnyJobFlag() {
  return !absl::GetFlag(FLAGS_name).empty() || !absl::GetFlag(FLAGS_preset).empty() ||
         absl::GetFlag(FLAGS_d_model) || absl::GetFlag(FLAGS_num_layers) ||
         absl::GetFlag(FLAGS_heads) || absl::GetFlag(FLAGS_epochs) ||
         absl::GetFlag(FLAGS_batch_size) || absl::GetFlag(FLAGS_lr) ||
         !absl::GetFlag(FLAGS_optimizer).empty() || absl::GetFlag(FLAGS_step_lr_step_size) ||
         absl::GetFlag(FLAGS_gpu_workers) || !absl::GetFlag(FLAGS_head_device).empty() ||
         absl::GetFlag(FLAGS_max_steps_per_epoch) || absl::GetFlag(FLAGS_seed) ||
         absl::GetFlag(FLAGS_checkpoint_every) || !absl::GetFlag(FLAGS_csv).empty() ||
         !absl::GetFlag(FLAGS_time_column).empty() || !absl::GetFlag(FLAGS_missing).empty() ||
         absl::GetFlag(FLAGS_input_steps) || absl::GetFlag(FLAGS_check_window_samples) ||
         absl::GetFlag(FLAGS_check_window_steps) || !absl::GetFlag(FLAGS_weather_dir).empty() ||
         !absl::GetFlag(FLAGS_covid_csv).empty() || !absl::GetFlag(FLAGS_swe_stations).empty() ||
         absl::GetFlag(FLAGS_swe_days) || absl::GetFlag(FLAGS_horizon) ||
         absl::GetFlag(FLAGS_stations) || absl::GetFlag(FLAGS_time_steps) ||
         !absl::GetFlag(FLAGS_mode).empty() || !absl::GetFlag(FLAGS_placement).empty() ||
         absl::GetFlag(FLAGS_project_epochs) || absl::GetFlag(FLAGS_loss_threshold) ||
         absl::GetFlag(FLAGS_weight_threshold) || absl::GetFlag(FLAGS_alpha) ||
         absl::GetFlag(FLAGS_weight_layer) >= 0 || !absl::GetFlag(FLAGS_lora_rank).empty() ||
         absl::GetFlag(FLAGS_lora_alpha) || absl::GetFlag(FLAGS_lora_lr) ||
         !absl::GetFlag(FLAGS_switch_rule).empty() || absl::GetFlag(FLAGS_consecutive_checks) ||
         absl::GetFlag(FLAGS_trend_windows) || absl::GetFlag(FLAGS_trend_gain) ||
         absl::GetFlag(FLAGS_plateau_z) || !absl::GetFlag(FLAGS_trial_test).empty() ||
         absl::GetFlag(FLAGS_trial_margin) || !absl::GetFlag(FLAGS_precision).empty() ||
         !absl::GetFlag(FLAGS_launch).empty() || !absl::GetFlag(FLAGS_select).empty() ||
         absl::GetFlag(FLAGS_validation_share) != 0 || absl::GetFlag(FLAGS_probe_steps) ||
         !absl::GetFlag(FLAGS_embedding_skip).empty();
}

// --`flag`'s `value` as a value of the enum E (its names as a text spec
// writes them); E(0), the default, where the flag is empty. An unknown name
// is an error naming the flag and the names allowed.
template <typename E>
absl::Status EnumFlag(const char* flag, const std::string& value, E* out) {
  *out = E(0);
  if (value.empty()) return absl::OkStatus();
  return ParseEnumName(absl::StrCat("--", flag), value, out);
}

// The training section of a submitted spec from the flags.
absl::Status TrainingFromFlags(TrainingSpec& t) {
  t.set_epochs(absl::GetFlag(FLAGS_epochs));
  t.set_batch_size(absl::GetFlag(FLAGS_batch_size));
  t.mutable_optimizer()->set_learning_rate(absl::GetFlag(FLAGS_lr));
  const std::string optimizer = absl::GetFlag(FLAGS_optimizer);
  if (optimizer == "adamw") {
    t.mutable_optimizer()->set_type(ADAMW);
  } else if (optimizer == "adam") {
    t.mutable_optimizer()->set_type(ADAM);
  } else if (!optimizer.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--optimizer '", optimizer, "' is not adam or adamw"));
  }
  t.set_step_lr_step_size(absl::GetFlag(FLAGS_step_lr_step_size));
  t.set_max_steps_per_epoch(absl::GetFlag(FLAGS_max_steps_per_epoch));
  if (absl::GetFlag(FLAGS_checkpoint_every) != 0) {
    t.set_checkpoint_every(absl::GetFlag(FLAGS_checkpoint_every));
  }
  t.set_seed(absl::GetFlag(FLAGS_seed));
  Precision::Name precision;
  RETURN_IF_ERROR(EnumFlag("precision", absl::GetFlag(FLAGS_precision), &precision));
  if (precision != 0) t.set_precision(precision);
  Launch::Mode launch;
  RETURN_IF_ERROR(EnumFlag("launch", absl::GetFlag(FLAGS_launch), &launch));
  if (launch != 0) t.set_launch(launch);
  Selection::Mode select;
  RETURN_IF_ERROR(EnumFlag("select", absl::GetFlag(FLAGS_select), &select));
  if (select != 0) t.set_select(select);
  return absl::OkStatus();
}

// `path` as the user means it: relative to where they stand, not to the
// coordinator's working directory (which is elsewhere, or has a data/
// folder of its own).
std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  // "--csv=~/x.csv": the shell leaves a tilde after '=' as it is.
  const char* home = std::getenv("HOME");
  if ((path == "~" || absl::StartsWith(path, "~/")) && home != nullptr && *home == '/') {
    return Absolute(home + path.substr(1));
  }
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

// The data section: one source (--csv, --weather_dir, --swe_stations,
// --covid_csv, or the synthetic series' --stations/--time_steps).
absl::Status DataFromFlags(DataSpec& d) {
  d.set_input_steps(absl::GetFlag(FLAGS_input_steps));
  d.set_validation_share(absl::GetFlag(FLAGS_validation_share));
  d.set_horizon(absl::GetFlag(FLAGS_horizon));
  d.set_missing(absl::GetFlag(FLAGS_missing));
  if (!absl::GetFlag(FLAGS_csv).empty()) {
    CsvData& csv = *d.mutable_csv();
    csv.set_path(Absolute(absl::GetFlag(FLAGS_csv)));
    csv.set_time_column(absl::GetFlag(FLAGS_time_column));
    int64_t b = 0, e = 0;
    if (!absl::GetFlag(FLAGS_train_rows).empty()) {
      bool first = true;
      for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_train_rows), ',')) {
        absl::Status s = ParseRows("train_rows", std::string(part), &b, &e);
        if (!s.ok()) return s;
        if (first) {
          csv.set_train_begin_row(b);
          csv.set_train_end_row(e);
          first = false;
        } else {
          RowSpan& more = *csv.add_more_train_rows();
          more.set_begin(b);
          more.set_end(e);
        }
      }
    }
    if (!absl::GetFlag(FLAGS_test_rows).empty()) {
      absl::Status s = ParseRows("test_rows", absl::GetFlag(FLAGS_test_rows), &b, &e);
      if (!s.ok()) return s;
      csv.set_test_begin_row(b);
      csv.set_test_end_row(e);
    }
  } else if (!absl::GetFlag(FLAGS_weather_dir).empty()) {
    d.mutable_weather()->set_dir(Absolute(absl::GetFlag(FLAGS_weather_dir)));
    d.mutable_weather()->set_target(absl::GetFlag(FLAGS_target));
    d.mutable_weather()->set_test_year(absl::GetFlag(FLAGS_test_year));
  } else if (!absl::GetFlag(FLAGS_swe_stations).empty()) {
    d.mutable_swe()->set_stations_csv(Absolute(absl::GetFlag(FLAGS_swe_stations)));
    d.mutable_swe()->set_days(absl::GetFlag(FLAGS_swe_days));
  } else if (!absl::GetFlag(FLAGS_covid_csv).empty()) {
    d.mutable_covid()->set_path(Absolute(absl::GetFlag(FLAGS_covid_csv)));
    d.mutable_covid()->set_target(absl::GetFlag(FLAGS_target));
    d.mutable_covid()->set_counties(absl::GetFlag(FLAGS_counties));
  } else if (absl::GetFlag(FLAGS_stations) || absl::GetFlag(FLAGS_time_steps)) {
    d.mutable_synthetic()->set_stations(absl::GetFlag(FLAGS_stations));
    d.mutable_synthetic()->set_time_steps(absl::GetFlag(FLAGS_time_steps));
  }
  return absl::OkStatus();
}

// The HpT section: the method, its check window and thresholds, LoRA.
absl::Status HptFromFlags(HptSpec& h) {
  TrainingMode::Name mode;
  RETURN_IF_ERROR(EnumFlag("mode", absl::GetFlag(FLAGS_mode), &mode));
  h.set_mode(mode);
  Placement::Name placement;
  RETURN_IF_ERROR(EnumFlag("placement", absl::GetFlag(FLAGS_placement), &placement));
  h.set_placement(placement);
  h.set_check_window_samples(absl::GetFlag(FLAGS_check_window_samples));
  h.set_check_window_steps(absl::GetFlag(FLAGS_check_window_steps));
  h.set_project_epochs(absl::GetFlag(FLAGS_project_epochs));
  h.set_loss_threshold(absl::GetFlag(FLAGS_loss_threshold));
  h.set_weight_threshold(absl::GetFlag(FLAGS_weight_threshold));
  h.set_alpha(absl::GetFlag(FLAGS_alpha));
  h.mutable_lora_optimizer()->set_learning_rate(absl::GetFlag(FLAGS_lora_lr));
  SwitchRule::Name rule;
  RETURN_IF_ERROR(EnumFlag("switch_rule", absl::GetFlag(FLAGS_switch_rule), &rule));
  h.set_switch_rule(rule);
  h.set_consecutive_checks(absl::GetFlag(FLAGS_consecutive_checks));
  h.set_trend_windows(absl::GetFlag(FLAGS_trend_windows));
  h.set_trend_gain(absl::GetFlag(FLAGS_trend_gain));
  h.set_plateau_z(absl::GetFlag(FLAGS_plateau_z));
  TrialTest::Name trial;
  RETURN_IF_ERROR(EnumFlag("trial_test", absl::GetFlag(FLAGS_trial_test), &trial));
  h.set_trial_test(trial);
  h.set_trial_margin(absl::GetFlag(FLAGS_trial_margin));
  h.set_probe_steps(absl::GetFlag(FLAGS_probe_steps));
  if (absl::GetFlag(FLAGS_weight_layer) >= 0) {
    h.set_weight_layer(absl::GetFlag(FLAGS_weight_layer));
    h.set_weight_layer_set(true);
  }
  h.mutable_lora()->set_alpha(absl::GetFlag(FLAGS_lora_alpha));
  h.set_reram_chip_tiles(absl::GetFlag(FLAGS_reram_chip_tiles));
  const std::string rank = absl::GetFlag(FLAGS_lora_rank);
  int parsed_rank = 0;
  if (rank == "auto") {
    h.mutable_lora()->set_auto_rank(true);
  } else if (!rank.empty()) {
    if (!absl::SimpleAtoi(rank, &parsed_rank) || parsed_rank < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--lora_rank '", rank, "' is not a positive integer or auto"));
    }
    h.mutable_lora()->set_rank(parsed_rank);
  }
  return absl::OkStatus();
}

// Builds the request from --spec and flags (flags override the file).
}  // namespace

absl::StatusOr<SubmitJobRequest> BuildSubmit() {
  SubmitJobRequest request;
  JobSpec& spec = *request.mutable_spec();
  if (!absl::GetFlag(FLAGS_spec).empty()) {
    // A job spec is a page of YAML; 1 MiB leaves room for long comments.
    absl::StatusOr<std::string> text = ReadUserTextFile(absl::GetFlag(FLAGS_spec), 1 << 20);
    if (!text.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--spec: ", text.status().message()));
    }
    // The coordinator parses the text, so errors name its lines. (`spec`
    // stays valid: the flags below fill it, and it is dropped at the end.)
    request.set_spec_text(*std::move(text));
  }
  if (!request.spec_text().empty() && AnyJobFlag()) {
    return absl::InvalidArgumentError(
        "give either --spec or job flags such as --epochs, not both");
  }
  if (!absl::GetFlag(FLAGS_name).empty()) spec.set_name(absl::GetFlag(FLAGS_name));
  if (!absl::GetFlag(FLAGS_preset).empty()) {
    spec.mutable_model()->set_preset(absl::GetFlag(FLAGS_preset));
  }
  spec.mutable_model()->set_d_model(absl::GetFlag(FLAGS_d_model));
  spec.mutable_model()->set_num_layers(absl::GetFlag(FLAGS_num_layers));
  spec.mutable_model()->set_num_heads(absl::GetFlag(FLAGS_heads));
  EmbeddingSkip::Mode skip = EmbeddingSkip::EMBEDDING_SKIP_UNSPECIFIED;
  RETURN_IF_ERROR(EnumFlag("embedding_skip", absl::GetFlag(FLAGS_embedding_skip), &skip));
  spec.mutable_model()->set_embedding_skip(skip);
  if (absl::Status st = TrainingFromFlags(*spec.mutable_training()); !st.ok()) return st;
  spec.mutable_placement()->set_gpu_workers(absl::GetFlag(FLAGS_gpu_workers));
  DeviceKind::Name head_device = DeviceKind::DEVICE_KIND_UNSPECIFIED;
  RETURN_IF_ERROR(EnumFlag("head_device", absl::GetFlag(FLAGS_head_device), &head_device));
  spec.mutable_placement()->set_head_device(head_device);
  if (absl::Status st = DataFromFlags(*spec.mutable_data()); !st.ok()) return st;
  if (absl::Status st = HptFromFlags(*spec.mutable_hpt()); !st.ok()) return st;
  if (!request.spec_text().empty()) request.clear_spec();
  request.set_request_id(absl::GetFlag(FLAGS_request_id));
  return request;
}


}  // namespace hpt
