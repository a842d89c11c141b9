#include "hptctl/job_format.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hpt {

ExitCode ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
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

std::string StateName(JobState state) {
  return absl::AsciiStrToLower(JobState_Name(state));
}

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "-";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

std::string FormatRow(const Job& job) {
  const JobProgress& p = job.progress();
  return absl::StrFormat("%-12s %-10s %-10s %-8s epoch %d/%d  step %d/%d  loss %s",
                         job.job_id(), StateName(job.state()), job.name(),
                         job.spec().model().preset(), p.epoch(), p.epochs(),
                         p.step(), p.total_steps(),
                         p.step() > 0 ? absl::StrFormat("%.4f", p.loss()) : "-");
}

std::string FormatProgress(const Job& job, int bar_width) {
  const JobProgress& p = job.progress();
  if (job.state() == QUEUED) return "queued: waiting for the scheduler";
  if (job.state() == RUNNING && p.total_steps() == 0) {
    return "starting: waiting for workers and loading the model";
  }
  const double fraction =
      p.total_steps() > 0 ? double(p.step()) / double(p.total_steps()) : 0.0;
  const int filled = static_cast<int>(fraction * bar_width);
  std::string bar = std::string(filled, '#') + std::string(bar_width - filled, '.');
  return absl::StrFormat(
      "[%s] %3d%% epoch %d/%d step %d/%d loss %s  %.1f samples/s  ETA %s", bar,
      static_cast<int>(fraction * 100), p.epoch(), p.epochs(), p.step(),
      p.total_steps(), p.step() > 0 ? absl::StrFormat("%.4f", p.loss()) : "-",
      p.samples_per_s(), p.step() > 0 ? FormatDuration(p.eta_s()) : "-");
}

std::string FormatSummary(const Job& job) {
  const JobProgress& p = job.progress();
  std::string out = absl::StrFormat("job %s (%s): %s\n", job.job_id(), job.name(),
                                    StateName(job.state()));
  absl::StrAppendFormat(&out, "  model      %s, %d gpu worker(s)\n",
                        job.spec().model().preset(),
                        job.spec().placement().gpu_workers());
  absl::StrAppendFormat(&out, "  progress   epoch %d/%d, step %d/%d, %s elapsed\n",
                        p.epoch(), p.epochs(), p.step(), p.total_steps(),
                        FormatDuration(p.elapsed_s()));
  if (job.epoch_losses_size() > 0) {
    std::string losses;
    for (int i = 0; i < job.epoch_losses_size(); ++i) {
      absl::StrAppendFormat(&losses, "%s%.4f", i ? " " : "", job.epoch_losses(i));
    }
    absl::StrAppendFormat(&out, "  epoch loss %s\n", losses);
  }
  if (p.test_loss() > 0) {
    absl::StrAppendFormat(&out, "  test MSE   %.4f (normalised units)\n",
                          p.test_loss());
  }
  if (job.device_costs_size() > 0) {
    absl::StrAppendFormat(&out, "  devices    %-8s %-22s %6s %10s %12s %12s\n", "kind",
                          "worker", "tasks", "measured", "simulated", "energy");
    for (const DeviceCost& d : job.device_costs()) {
      absl::StrAppendFormat(&out, "             %-8s %-22s %6d %9.3fs %11.6fs %10.4g J\n",
                            d.kind(), d.worker(), d.tasks(), d.cost().measured_s(),
                            d.cost().simulated_s(), d.cost().energy_j());
      std::string counters;
      for (const char* name : {"cell_writes", "max_cell_writes", "adc_conversions",
                               "crossbar_activations", "macs", "cycles"}) {
        auto it = d.cost().counters().find(name);
        if (it == d.cost().counters().end()) continue;
        absl::StrAppendFormat(&counters, "%s%s %.6g", counters.empty() ? "" : ", ",
                              name, it->second);
      }
      if (!counters.empty()) absl::StrAppendFormat(&out, "             (%s)\n", counters);
    }
  }
  if (!job.error().empty()) absl::StrAppendFormat(&out, "  error      %s\n", job.error());
  return out;
}

}  // namespace hpt
