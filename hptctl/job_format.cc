#include "hptctl/job_format.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <tuple>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/device_kind.h"
#include "common/gpu_baseline.h"
#include "common/training_phase.h"
#include "cost/switch_diagnosis.h"
#include "cost/text_report.h"
#include "google/protobuf/util/json_util.h"
#include "models/model_shape.h"

namespace hpt {

int PrintFailure(const absl::Status& status) {
  std::cerr << "hptctl: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
            << std::endl;
  return ExitCodeFor(status);
}

ExitCode ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return kExitInvalid;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitUnavailable;
    default:
      return kExitError;
  }
}

namespace {

// A job's test skill over persistence, "-" before it has one.
std::string SkillText(const QualityMetrics& q) {
  return q.values() > 0 && q.persistence_rmse() > 0 ? absl::StrFormat("%.3f", q.skill()) : "-";
}

// A job of hpt.mode full trains every parameter throughout: no LoRA phase.
bool FullOnly(const Job& job) { return job.spec().hpt().mode() == TrainingMode::full; }

}  // namespace

std::string FormatList(const std::vector<Job>& jobs) {
  // The name column fits the longest name, up to 24 characters.
  size_t name_width = 4;
  for (const Job& job : jobs) name_width = std::max(name_width, job.name().size());
  name_width = std::min<size_t>(name_width, 24);
  auto row = [&](absl::string_view id, absl::string_view state, absl::string_view name,
                 absl::string_view preset, absl::string_view epoch, absl::string_view step,
                 absl::string_view loss, absl::string_view skill, absl::string_view phase,
                 absl::string_view at) {
    std::string shown(name.substr(0, name_width));
    if (name.size() > name_width) shown.back() = '~';
    return absl::StrFormat("%-12s %-10s %-*s %-8s %-7s %-11s %-8s %-7s %-6s %s\n", id, state,
                           int(name_width), shown, preset, epoch, step, loss, skill, phase, at);
  };
  std::string out =
      row("JOB", "STATE", "NAME", "PRESET", "EPOCH", "STEP", "LOSS", "SKILL", "PHASE", "SWITCH");
  for (const Job& job : jobs) {
    const JobProgress& p = job.progress();
    const HptStatus& h = job.hpt();
    const bool full_job = FullOnly(job);
    std::string phase = "-";  // not named yet: the job has not started
    if (full_job) {
      phase = "full*";
    } else if (h.phase() != TrainingPhase::TRAINING_PHASE_UNSPECIFIED) {
      phase = PhaseName(h.phase());
    }
    const std::string at = full_job               ? "-"
                           : h.switch_step() >= 0 ? absl::StrCat(h.switch_step())
                           : job.state() == SUCCEEDED && p.step() > 0 ? "never"
                                                                      : "-";
    absl::StrAppend(&out, row(job.job_id(), StateName(job.state()), job.name(),
                              job.spec().model().preset(), absl::StrCat(p.epoch(), "/", p.epochs()),
                              absl::StrCat(p.step(), "/", p.total_steps()),
                              p.step() > 0 ? absl::StrFormat("%.4f", p.loss()) : "-",
                              SkillText(job.test_metrics()), phase, at));
  }
  if (absl::c_any_of(jobs, FullOnly))
    absl::StrAppend(&out, "full*: hpt.mode full, no LoRA phase\n");
  if (absl::c_any_of(jobs, [](const Job& j) { return j.test_metrics().persistence_rmse() > 0; })) {
    absl::StrAppend(&out, "SKILL: test skill over persistence (below 0: the model loses to it)\n");
  }
  return out;
}

std::string FormatProgress(const Job& job, int bar_width) {
  const JobProgress& p = job.progress();
  if (job.state() == QUEUED) return "queued: waiting for the scheduler";
  if (job.state() == LOADING) return "loading its data";
  if (job.state() == RUNNING && p.total_steps() == 0) {
    return "starting: waiting for workers and loading the model";
  }
  const double fraction =
      p.total_steps() > 0 ? double(p.step()) / double(p.total_steps()) : 0.0;
  const int filled = static_cast<int>(fraction * bar_width);
  std::string bar = std::string(filled, '#') + std::string(bar_width - filled, '.');
  // The phase leads once the controller has named it; while an evaluation
  // runs, how far it is stands where the training's ETA would, and after
  // the last step, before the final evaluation reports, that training is
  // done.
  const TrainingPhase::Name phase = job.hpt().phase();
  return absl::StrFormat(
      "%s[%s] %3d%% epoch %d/%d step %d/%d loss %s  %.1f samples/s  %s",
      phase == TrainingPhase::TRAINING_PHASE_UNSPECIFIED ? "" : absl::StrCat(PhaseName(phase), " "),
      bar, static_cast<int>(fraction * 100), p.epoch(), p.epochs(), p.step(), p.total_steps(),
      p.step() > 0 ? absl::StrFormat("%.4f", p.loss()) : "-", p.samples_per_s(),
      !p.evaluating().empty() ? absl::StrCat("evaluating ", p.evaluating())
      : p.total_steps() > 0 && p.step() >= p.total_steps()
          ? "training done"
          : absl::StrCat("ETA ", p.step() > 0 ? FormatDuration(p.eta_s()) : "-"));
}

namespace {

// "1 h", "30 min", "1 d", "7 d", "15 s".
std::string StepText(int64_t s) {
  if (s > 0 && s % 86400 == 0) return absl::StrCat(s / 86400, " d");
  if (s > 0 && s % 3600 == 0) return absl::StrCat(s / 3600, " h");
  if (s > 0 && s % 60 == 0) return absl::StrCat(s / 60, " min");
  return absl::StrCat(s, " s");
}

// The data lines of a job's summary: source, size, gaps, time span, split.
std::string DataLines(const DataSummary& d) {
  std::string out;
  if (d.rows() == 0) return out;
  // COVID-19's series are counties; every other source's, stations.
  absl::StrAppendFormat(&out, "  data       %s, %d time steps x %d %s", d.source(), d.rows(),
                        d.columns(), d.source() == "covid" ? "counties" : "stations");
  if (d.skipped_rows() > 0) {
    absl::StrAppendFormat(&out, ", %d %s %s skipped", d.skipped_rows(),
                          d.skipped_rows() == 1 ? "row" : "rows",
                          d.source() == "csv" ? "with an empty cell" : "without a timestamp");
  }
  if (d.filled_cells() > 0) {
    absl::StrAppendFormat(&out, ", %d %s interpolated", d.filled_cells(),
                          d.filled_cells() == 1 ? "gap" : "gaps");
  }
  absl::StrAppend(&out, "\n");
  if (!d.first_time().empty()) {
    absl::StrAppendFormat(
        &out, "  time       %s to %s UTC, every %s%s\n", d.first_time(), d.last_time(),
        StepText(d.time_step_s()),
        d.time_column().empty() ? "" : absl::StrCat(" (column ", d.time_column(), ")"));
  }
  if (!d.split().empty()) absl::StrAppend(&out, "  split      ", d.split(), "\n");
  return out;
}

// The devices lines: each worker's tasks, measured and modelled cost.
std::string DeviceLines(const Job& job) {
  std::string out;
  for (const DeviceCost& d : job.device_costs()) {
    if (d.kind() == DeviceKind::gpu && absl::StrContains(d.device(), "CUDA not found")) {
      absl::StrAppend(&out, "  gpu        CUDA not found: LibTorch ran on the CPU\n");
      break;
    }
  }
  if (job.device_costs_size() > 0) {
    absl::StrAppendFormat(&out, "  devices    %-8s %-22s %6s %10s %12s %12s\n", "kind", "worker",
                          "tasks", "measured", "simulated", "energy");
    for (const DeviceCost& d : job.device_costs()) {
      absl::StrAppendFormat(&out, "             %-8s %-22s %6d %9.3fs %11.6fs %10.4g J\n",
                            KindName(d.kind()), d.worker(), d.tasks(), d.cost().measured_s(),
                            d.cost().simulated_s(), d.cost().energy_j());
      std::string counters = d.device().empty() ? "" : absl::StrCat("ran on ", d.device());
      for (const char* name : {"cell_writes", "max_cell_writes", "adc_conversions",
                               "crossbar_activations", "macs", "cycles"}) {
        auto it = d.cost().counters().find(name);
        if (it == d.cost().counters().end()) continue;
        absl::StrAppendFormat(&counters, "%s%s %.6g", counters.empty() ? "" : ", ", name,
                              it->second);
      }
      if (!counters.empty()) absl::StrAppendFormat(&out, "             (%s)\n", counters);
    }
  }
  return out;
}

// What the service tells of an HpT job at a glance: its phase and why it
// switched (or how far it is from switching), its test quality beside
// persistence, and what HpT saved against GPU-only training.
std::string OutcomeLines(const Job& job) {
  std::string out;
  const HptStatus& h = job.hpt();
  const bool full_job = FullOnly(job);
  if (full_job) {
    absl::StrAppend(&out, "  phase      full (hpt.mode full: every parameter, no LoRA phase)\n");
  } else if (job.state() != LOADING && job.state() != QUEUED &&
             h.phase() != TrainingPhase::TRAINING_PHASE_UNSPECIFIED) {
    absl::StrAppend(&out, "  phase      ", PhaseName(h.phase()),
                    h.switch_step() >= 0 ? absl::StrCat(" since step ", h.switch_step()) : "",
                    "\n");
    if (const std::string why = SwitchWhy(job); !why.empty()) {
      absl::StrAppend(&out, "  switched   ", why, "\n");
    } else if (const std::vector<std::string> lines = ClosestApproach(job); !lines.empty()) {
      absl::StrAppend(&out, "  switch     ", lines[0], " (hptctl report ", job.job_id(),
                      " says why)\n");
    }
  }
  const QualityMetrics& q = job.test_metrics();
  if (q.values() > 0) {
    const std::string unit = job.data().unit().empty() ? "" : " " + job.data().unit();
    absl::StrAppend(&out, absl::StrFormat("  quality    test RMSE %.4g%s, MAE %.4g%s", q.rmse(),
                                          unit, q.mae(), unit));
    if (q.persistence_rmse() > 0) {
      absl::StrAppend(&out, "; ", SkillOverPersistence(q, unit),
                      q.skill() < 0 ? ": it LOSES to persistence" : "");
    }
    absl::StrAppend(&out, "\n");
  }
  const CostComparison& c = h.comparison();
  if (!full_job && TrainedWithoutSwitch(job)) {
    absl::StrAppend(&out, "  HpT saved  nothing", NothingSavedWhy(job), "\n");
  } else if (!full_job && c.hpt_time_s() > 0 && c.time_ratio() > 0) {
    absl::StrAppend(
        &out, absl::StrFormat("  HpT saved  %.3gx time, %s energy against GPU-only (%s baseline, "
                              "simulated steps; hptctl report %s for each baseline)\n",
                              c.time_ratio(),
                              c.energy_ratio() > 0 ? absl::StrFormat("%.3gx", c.energy_ratio())
                                                   : std::string("unknown"),
                              GpuBaselineName(c.baseline()), job.job_id()));
    // "Saved 0.138x" would read as a saving: below 1, say what it cost.
    std::vector<std::string> more;
    if (c.time_ratio() < 1) more.push_back(absl::StrFormat("%.3gx the time", 1 / c.time_ratio()));
    if (c.energy_ratio() > 0 && c.energy_ratio() < 1) {
      more.push_back(absl::StrFormat("%.3gx the energy", 1 / c.energy_ratio()));
    }
    if (!more.empty()) {
      absl::StrAppend(&out, "             below 1x: HpT took ", absl::StrJoin(more, " and "),
                      " of GPU-only training\n");
    }
    // The bar the claim must clear: the fastest GPU-only way, modelled.
    const BaselineComparison* fastest = FastestBaseline(c, /*measured=*/false);
    if (fastest != nullptr && fastest->baseline() != GpuBaselineName(c.baseline())) {
      absl::StrAppend(&out, absl::StrFormat("             %.3gx time against the fastest GPU-only "
                                            "(%s, modelled)%s\n",
                                            fastest->time_ratio(), fastest->baseline(),
                                            fastest->time_ratio() < 1 ? ": HpT is slower" : ""));
    }
  }
  return out;
}

}  // namespace

std::string FormatSummary(const Job& job) {
  const JobProgress& p = job.progress();
  std::string out = absl::StrFormat("job %s (%s): %s\n", job.job_id(), job.name(),
                                    StateName(job.state()));
  absl::StrAppendFormat(&out, "  model      %s, %d gpu worker(s)\n",
                        job.spec().model().preset(),
                        job.spec().placement().gpu_workers());
  if (job.has_model()) absl::StrAppend(&out, "  shape      ", ModelShapeLine(job.model()), "\n");
  absl::StrAppend(&out, DataLines(job.data()));
  if (!job.waiting_for().empty()) {
    absl::StrAppend(&out, "  waiting    for ", job.waiting_for(), "\n");
  }
  if (!job.hpt().fallback_reason().empty()) {
    absl::StrAppend(&out, "  fallback   ", job.hpt().fallback_reason(), "\n");
  }
  // A running job's ETA as its last step left it (watch's bar says the same).
  const bool eta = job.state() == RUNNING && p.step() > 0 && p.step() < p.total_steps() &&
                   p.evaluating().empty();
  absl::StrAppendFormat(&out, "  progress   epoch %d/%d, step %d/%d, %s elapsed%s\n", p.epoch(),
                        p.epochs(), p.step(), p.total_steps(), FormatDuration(p.elapsed_s()),
                        eta ? absl::StrCat(", ETA ", FormatDuration(p.eta_s())) : "");
  if (!p.evaluating().empty()) absl::StrAppend(&out, "  evaluating ", p.evaluating(), "\n");
  if (job.epoch_losses_size() > 0) {
    std::string losses;
    for (int i = 0; i < job.epoch_losses_size(); ++i) {
      absl::StrAppendFormat(&losses, "%s%.4f", i ? " " : "", job.epoch_losses(i));
    }
    absl::StrAppendFormat(&out, "  epoch loss %s\n", losses);
  }
  if (p.test_loss() > 0) {
    absl::StrAppendFormat(&out, "  test MSE   %.4f (normalised units)%s\n", p.test_loss(),
                          p.selected_epoch() > 0
                              ? absl::StrFormat(", of epoch %d: it validated best (MSE %.4f)",
                                                p.selected_epoch(), p.selected_validation_loss())
                              : "");
  }
  if (p.validation_loss() > 0) {
    absl::StrAppendFormat(&out, "  valid MSE  %.4f after the last epoch (normalised units)\n",
                          p.validation_loss());
  }
  absl::StrAppend(&out, OutcomeLines(job));
  absl::StrAppend(&out, DeviceLines(job));
  if (job.checkpoint_step() > 0) {
    absl::StrAppendFormat(&out, "  checkpoint step %d (hptctl checkpoints %s)\n",
                          job.checkpoint_step(), job.job_id());
  }
  for (const Recovery& r : job.recoveries()) {
    absl::StrAppendFormat(&out, "  recovery   back to step %d (%d step(s) replayed): %s\n",
                          r.from_step(), r.lost_steps(), r.cause());
    if (r.workers_size() > 0) {
      absl::StrAppendFormat(&out, "             went on with %s\n", absl::StrJoin(r.workers(), ", "));
    }
  }
  if (!job.error().empty()) absl::StrAppendFormat(&out, "  error      %s\n", job.error());
  return out;
}

std::string FormatCheckpoints(const std::string& job_id,
                              const std::vector<CheckpointInfo>& checkpoints) {
  if (checkpoints.empty()) return absl::StrCat(job_id, " has no checkpoints\n");
  std::string out = absl::StrFormat("%8s %6s %-6s %10s %10s  %-20s %s\n", "step", "epoch",
                                    "phase", "loss", "size", "time", "why");
  for (const CheckpointInfo& c : checkpoints) {
    absl::StrAppendFormat(
        &out, "%8d %6d %-6s %10.5g %10s  %-20s %s\n", c.step(), c.epoch(), PhaseName(c.phase()),
        c.loss(),
        c.bytes() > 0 ? absl::StrFormat("%.1f MiB", double(c.bytes()) / (1 << 20)) : "memory",
        absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(c.time_unix_ms()),
                         absl::UTCTimeZone()),
        c.reason());
  }
  return out;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

absl::Status ParseRows(const std::string& flag, const std::string& value, int64_t* begin,
                       int64_t* end) {
  std::vector<std::string> parts = absl::StrSplit(value, ':');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], begin) ||
      !absl::SimpleAtoi(parts[1], end)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " '", value, "' is not BEGIN:END (e.g. 0:6000)"));
  }
  return absl::OkStatus();
}

}  // namespace hpt
