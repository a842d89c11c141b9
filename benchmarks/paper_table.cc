// paper_table: the paper's four applications in one table. For swe,
// weather, covid and wind:
//  - over --seeds training seeds, the switch iteration and test RMSE of
//    HpT vs full-parameter training, with the paper's phase-controller
//    defaults (k samples per application, thresholds 0.1 / 0.01, alpha
//    0.01) and its training recipe (coordinator/spec/paper_recipes.h; rates
//    scaled by sqrt(batch)) on a model this machine trains in minutes
//    (--layers x --d_model, batch --batch). HpT's RMSE twice: its LoRA
//    phase on the GPU worker, and from the same switch on the devices
//    (ReRAM quantisation, ADC and noise; the systolic array's numerics);
//  - the simulated full-phase GPU step and LoRA-phase chip step at the
//    paper's size (12 layers, d_model 512) and batch 1, from a short run of
//    that model through the GPU worker, the ReRAM chip and the systolic
//    array (a forced switch: it measures costs, not convergence);
//  - HpT vs GPU-only time and energy projected to the paper's training
//    length (its epochs, batch 1) from those step costs and the measured
//    switch point, against each GPU baseline (paper: eager, per-parameter
//    Adam; fused; graph: devices/work_cost.h), each re-costed from the cost
//    run's work record (cost/record_costing.h);
//  - which chip configuration, if any, reaches the paper's 11.9x time and
//    12.05x energy: a search over the ReRAM chip's tiles and the systolic
//    array's rows on that record.
//
//   bazel run -c opt //benchmarks:paper_table -- --data_dir=../shared/data
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "benchmarks/bench_jobs.h"
#include "benchmarks/child_tasks.h"
#include "benchmarks/paper_projection.h"
#include "benchmarks/seed_stats.h"
#include "common/gpu_baseline.h"
#include "common/process_setup.h"
#include "common/status_macros.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/training/job_data.h"
#include "cost/record_costing.h"
#include "cost/switch_diagnosis.h"
#include "hptctl/cost_views.h"
#include "models/model_config.h"

ABSL_FLAG(std::string, data_dir, "../shared/data", "The real data sets' folder.");
ABSL_FLAG(std::string, apps, "swe,weather,covid,wind", "Applications, in order.");
ABSL_FLAG(int, epochs, 0,
          "Epochs of the small model's runs (0: per application, SmallModelEpochs: swe 24 "
          "and weather 22 as the paper, covid 8, wind 10).");
ABSL_FLAG(int, layers, 2, "Layers of the small model.");
ABSL_FLAG(int, d_model, 64,
          "d_model of the small model; its heads keep the paper's head width (d_model / heads: "
          "32 for swe and weather, 64 for covid and wind).");
ABSL_FLAG(int, batch, 32,
          "Batch size of the small model's runs (the recipe's rates scaled by sqrt(batch)).");
ABSL_FLAG(int, seeds, 5, "Training seeds per application (42, 43, ...).");
ABSL_FLAG(int, parallel, 2,
          "Seeds trained at once, each in a child process of this binary on one LibTorch "
          "thread (benchmarks/child_tasks.h).");
ABSL_FLAG(std::string, switch_rule, "",
          "The phase controller's rule: paper, consecutive, trend or plateau, with +margin "
          "for the margin trial test (empty: the service's default).");
ABSL_FLAG(double, reram_read_noise, 0,
          "ReRAM read noise sigma in conductance levels for the devices column (0: as "
          "DNN+NeuroSim V1.3's inference default, --vari 0; the read error at other settings: "
          "tools/aihwkit_compare.sh).");
ABSL_FLAG(double, reram_program_noise, 0,
          "ReRAM programming noise sigma in conductance levels for the devices column.");
ABSL_FLAG(int, cost_steps, 20,
          "Steps of the paper-size cost run (batch 1): 3-step windows put the switch at "
          "step 12, so the LoRA phase has steps to cost.");

namespace hpt {
namespace {

struct Row {
  std::string app;
  std::string small;      // the small model, for the table's note
  std::vector<int64_t> switches;   // per seed, at --batch; -1: none
  std::vector<int> trials;         // per seed: trial windows before the switch
  std::vector<double> rmse_full, rmse_gpu, rmse_devices;
  // Per seed, on the same test values: the references' RMSE and each
  // arm's skill over persistence (QualityMetrics).
  std::vector<double> persistence, climatology, skill_full, skill_devices;
  std::string climatology_basis;
  int epochs_small = 0;
  int64_t window_steps = 0;
  double full_step_s = 0, full_step_j = 0, lora_step_s = 0, lora_step_j = 0;
  // Per seed, against the paper's GPU baseline: the projected ratios.
  std::vector<double> time_ratios, energy_ratios;
  // Per GPU baseline (AllGpuBaselines' order): the ratios' means over seeds.
  std::vector<std::pair<double, double>> baselines;
  std::vector<std::string> targets;  // what reaches 11.9x / 12.05x
  int64_t train_samples = 0;
  double epochs = 0;
  std::string error;
};

// The small model's job for `row->app`: the preset's recipe at --batch,
// its heads keeping the paper model's head width.
absl::StatusOr<JobSpec> SmallSpec(const std::string& dir, Row* row) {
  const int d_model = absl::GetFlag(FLAGS_d_model);
  ASSIGN_OR_RETURN(JobSpec small,
                   SmallModelSpec(row->app, dir, absl::GetFlag(FLAGS_layers), d_model,
                                  absl::GetFlag(FLAGS_batch), absl::GetFlag(FLAGS_epochs)));
  row->epochs_small = small.training().epochs();
  RETURN_IF_ERROR(SetRuleName(absl::GetFlag(FLAGS_switch_rule), *small.mutable_hpt()));
  row->small = absl::StrFormat("%d x %d, %d heads, %d epochs", absl::GetFlag(FLAGS_layers),
                               d_model, small.model().num_heads(), row->epochs_small);
  return small;
}

// The trial windows a job ran: each ends in a TRIAL_END event.
int TrialWindows(const HptStatus& h) {
  int n = 0;
  for (const PhaseEvent& e : h.events()) n += e.kind() == PhaseEvent::TRIAL_END ? 1 : 0;
  return n;
}

// One seed of one application, in a child process: full, HpT with LoRA on
// the GPU, and the same HpT from its switch on the devices, as text.
std::string QualityOfSeed(const std::string& dir, const std::string& task) {
  const std::vector<std::string> parts = absl::StrSplit(task, ':');
  uint64_t seed = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &seed)) return "error bad task\n";
  Row row;
  row.app = parts[0];
  absl::StatusOr<JobSpec> small = SmallSpec(dir, &row);
  if (!small.ok()) return absl::StrCat("error ", small.status().message(), "\n");
  small->mutable_training()->set_seed(seed);
  const DeviceNoise noise{absl::GetFlag(FLAGS_reram_read_noise),
                          absl::GetFlag(FLAGS_reram_program_noise)};
  const std::string label = absl::StrCat(row.app, " seed ", seed);
  absl::StatusOr<BenchRun> full = RunInProcess(*small, TrainingMode::full, label + " full", 1);
  if (!full.ok()) return absl::StrCat("error ", full.status().message(), "\n");
  absl::StatusOr<HptPair> hpt = RunHptOnGpuAndDevices(*small, label, 1, true, noise);
  if (!hpt.ok()) return absl::StrCat("error ", hpt.status().message(), "\n");
  std::string out = absl::StrFormat(
      "switch %d\ntrials %d\nwindow %d\nfull %.17g\ngpu %.17g\ndevices %.17g\nno_lora %d\n",
      hpt->gpu.job.hpt().switch_step(), TrialWindows(hpt->gpu.job.hpt()),
      hpt->gpu.job.hpt().check_window_steps(),
      full->job.test_metrics().rmse(), hpt->gpu.job.test_metrics().rmse(),
      hpt->switched ? hpt->devices.job.test_metrics().rmse() : hpt->gpu.job.test_metrics().rmse(),
      hpt->no_lora_steps ? 1 : 0);
  const QualityMetrics& q = full->job.test_metrics();
  const QualityMetrics& h = hpt->switched ? hpt->devices.job.test_metrics()
                                          : hpt->gpu.job.test_metrics();
  absl::StrAppendFormat(&out,
                        "persistence %.17g\nclimatology %.17g\nskill_full %.17g\n"
                        "skill_devices %.17g\nbasis %s\n",
                        q.persistence_rmse(), q.climatology_rmse(), q.skill(), h.skill(),
                        q.climatology());
  // A seed that never switched says how close each test came.
  for (const std::string& line : ClosestApproach(hpt->gpu.job)) {
    absl::StrAppend(&out, "closest ", line, "\n");
  }
  return out;
}

// Forecast skill beside the RMSE: each application's references on its
// test split (means over seeds) and each arm's skill over persistence.
void PrintSkill(const std::vector<Row>& rows) {
  std::printf("\nForecast skill (1 - RMSE / RMSE of persistence; below 0 loses to persistence), "
              "means over the seeds:\n%-8s %-14s %-14s %-12s %-12s %s\n", "app",
              "persistence", "climatology", "skill full", "skill HpT", "climatology is");
  for (const Row& r : rows) {
    if (!r.error.empty() || r.persistence.empty()) continue;
    std::printf("%-8s %-14.4g %-14.4g %-12.3f %-12.3f %s\n", r.app.c_str(),
                Summarize(r.persistence).mean, Summarize(r.climatology).mean,
                Summarize(r.skill_full).mean, Summarize(r.skill_devices).mean,
                r.climatology_basis.c_str());
  }
}

// Every application's seeds, --parallel child processes at a time; prints
// each seed's line in order.
void MeasureQuality(const std::string& dir, std::vector<Row>& rows) {
  std::vector<std::string> tasks;
  for (const Row& r : rows) {
    for (int i = 0; i < absl::GetFlag(FLAGS_seeds); ++i) {
      tasks.push_back(absl::StrCat(r.app, ":", 42 + i));
    }
  }
  std::vector<std::string> results(tasks.size());
  const std::string scratch = "/tmp/paper_table." + std::to_string(getpid());
  RunChildTasks(tasks, absl::GetFlag(FLAGS_parallel), scratch,
                [&](size_t i, const std::string& text) {
                  results[i] = text;
                  std::fprintf(stderr, "  %s done\n", tasks[i].c_str());
                });
  std::filesystem::remove_all(scratch);
  size_t t = 0;
  for (Row& row : rows) {
    for (int i = 0; i < absl::GetFlag(FLAGS_seeds); ++i, ++t) {
      std::map<std::string, std::string> v;
      std::vector<std::string> closest;
      for (absl::string_view line : absl::StrSplit(results[t], '\n', absl::SkipEmpty())) {
        const std::pair<std::string, std::string> kv =
            absl::StrSplit(line, absl::MaxSplits(' ', 1));
        if (kv.first == "closest") {
          closest.push_back(kv.second);
        } else {
          v[kv.first] = kv.second;
        }
      }
      if (v.count("error") > 0 || v.count("switch") == 0) {
        row.error = absl::StrCat(tasks[t], ": ", v.count("error") > 0 ? v["error"] : "no result");
        continue;
      }
      row.switches.push_back(std::stoll(v["switch"]));
      row.trials.push_back(v.count("trials") > 0 ? std::stoi(v["trials"]) : 0);
      row.window_steps = std::stoll(v["window"]);
      row.rmse_full.push_back(std::stod(v["full"]));
      row.rmse_gpu.push_back(std::stod(v["gpu"]));
      row.rmse_devices.push_back(std::stod(v["devices"]));
      row.persistence.push_back(std::stod(v["persistence"]));
      row.climatology.push_back(std::stod(v["climatology"]));
      row.skill_full.push_back(std::stod(v["skill_full"]));
      row.skill_devices.push_back(std::stod(v["skill_devices"]));
      row.climatology_basis = v["basis"];
      std::printf("  %-8s seed %d: switch %lld, RMSE full %.4f, HpT (GPU) %.4f, HpT (devices) "
                  "%.4f%s\n",
                  row.app.c_str(), 42 + i, static_cast<long long>(row.switches.back()),
                  row.rmse_full.back(), row.rmse_gpu.back(), row.rmse_devices.back(),
                  v["no_lora"] == "1" ? " (switch at the last step: no LoRA step)" : "");
      std::printf("    skill over persistence: full %.3f, HpT (devices) %.3f; persistence RMSE "
                  "%.4f, climatology RMSE %.4f\n",
                  row.skill_full.back(), row.skill_devices.back(), row.persistence.back(),
                  row.climatology.back());
      for (const std::string& line : closest) std::printf("    %s\n", line.c_str());
    }
  }
  std::fflush(stdout);
}

// The paper-size cost run of `row->app` and the projections of its seeds'
// switches.
absl::Status Measure(const std::string& dir, Row* row) {
  ASSIGN_OR_RETURN(const JobSpec small, SmallSpec(dir, row));
  // 2. Step costs at the paper's size and batch 1 (a forced switch).
  ASSIGN_OR_RETURN(std::shared_ptr<const WorkRecord> record,
                   PaperSizeCostRecord(row->app, dir, absl::GetFlag(FLAGS_cost_steps)));

  // 3. The paper's length at batch 1: every training sample, its epochs;
  // the switch after the same number of samples and trial windows.
  ASSIGN_OR_RETURN(const PaperLength length, PaperLengthOf(small));
  row->train_samples = length.train_samples;
  row->epochs = length.epochs;
  auto project = [&length](const JobCosts& c, bool energy, int64_t switch_step, int trials) {
    return ProjectedRatio(c, length, energy, switch_step, trials);
  };
  for (GpuBaseline::Name b : AllGpuBaselines()) {
    ASSIGN_OR_RETURN(JobCosts c, CostOfRecord(*record, {{"gpu_baseline", GpuBaselineName(b)}}));
    std::vector<double> time, energy;
    for (size_t i = 0; i < row->switches.size(); ++i) {
      time.push_back(project(c, false, row->switches[i], row->trials[i]));
      energy.push_back(project(c, true, row->switches[i], row->trials[i]));
    }
    if (b == GpuBaseline::paper) {
      const CostComparison& cmp = c.comparison;
      row->full_step_s = cmp.full_step_s();
      row->full_step_j = cmp.full_step_j();
      row->lora_step_s = cmp.lora_step_s();
      row->lora_step_j = cmp.lora_step_j();
      row->time_ratios = time;
      row->energy_ratios = energy;
    }
    row->baselines.push_back({Summarize(time).mean, Summarize(energy).mean});
  }
  // The chip search projects at the seeds' median switch and trials.
  const SwitchStats median = SummarizeSwitches(row->switches);
  const int64_t at = median.min < 0 ? -1 : int64_t(median.median);
  std::vector<int> trials = row->trials;
  std::sort(trials.begin(), trials.end());
  const int median_trials = trials.empty() ? 0 : trials[trials.size() / 2];
  // Chip configurations for the paper's figures, under its own baseline.
  const std::vector<SweepGrid> chips = {
      {"reram_chip_tiles", {"1008", "1048576"}, {}}, {"systolic_rows", {"128", "4096"}, {}}};
  for (const auto& [what, target] : std::vector<std::pair<std::string, double>>{
           {"time", 11.9}, {"energy", 12.05}}) {
    for (const SweepGrid& grid : chips) {
      ASSIGN_OR_RETURN(TargetResult r,
                       FindTarget(*record, grid,
                                  [&](const JobCosts& c) {
                                    return project(c, what == "energy", at, median_trials);
                                  },
                                  what, target, {}));
      row->targets.push_back(r.message);
    }
  }
  return absl::OkStatus();
}

std::string Seconds(double s) {
  return s >= 1 ? absl::StrFormat("%.3g s", s) : absl::StrFormat("%.3g ms", s * 1e3);
}

// The switch, quality and projected savings of each application over the
// seeds.
void PrintQuality(const std::vector<Row>& rows) {
  std::printf("\nHpT on the paper's four applications over %d seeds (small models for the "
              "switch and quality; 12 layers, d_model 512 at batch 1 for the step costs; V100, "
              "NeuroSim-calibrated ReRAM chip, SCALE-Sim systolic array)\n\n",
              absl::GetFlag(FLAGS_seeds));
  std::printf("%-8s %-46s %-18s %-18s %-9s %-18s %-18s\n", "app", "switch step (k)",
              "RMSE/full, GPU", "RMSE/full, devices", "p worse", "time", "energy");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-8s failed: %s\n", r.app.c_str(), r.error.c_str());
      continue;
    }
    std::vector<double> gpu, dev;
    for (size_t i = 0; i < r.rmse_full.size(); ++i) {
      gpu.push_back(r.rmse_gpu[i] / r.rmse_full[i]);
      dev.push_back(r.rmse_devices[i] / r.rmse_full[i]);
    }
    const Spread g = Summarize(gpu), d = Summarize(dev), t = Summarize(r.time_ratios),
                 e = Summarize(r.energy_ratios);
    const PairedTest worse = PairedGreaterTest(r.rmse_devices, r.rmse_full);
    std::printf("%-8s %-46s %-18s %-18s %-9s %-18s %-18s\n", r.app.c_str(),
                absl::StrCat(FormatSwitches(SummarizeSwitches(r.switches)), " (", r.window_steps,
                             ")")
                    .c_str(),
                absl::StrFormat("%.3f +- %.3f", g.mean, g.sd).c_str(),
                absl::StrFormat("%.3f +- %.3f", d.mean, d.sd).c_str(),
                absl::StrFormat("%.2g", worse.p_one_sided).c_str(),
                absl::StrFormat("%.2fx (%.2f-%.2f)", t.mean, t.min, t.max).c_str(),
                absl::StrFormat("%.2fx (%.2f-%.2f)", e.mean, e.min, e.max).c_str());
  }
}

// Each application's measured step times and what they are projected to.
void PrintSteps(const std::vector<Row>& rows) {
  std::printf("\n%-8s %-12s %-12s %s\n", "app", "full step", "LoRA step", "projected to");
  for (const Row& r : rows) {
    if (!r.error.empty()) continue;
    std::printf("%-8s %-12s %-12s %g epochs x %lld samples (batch 1)\n", r.app.c_str(),
                Seconds(r.full_step_s).c_str(), Seconds(r.lora_step_s).c_str(), r.epochs,
                static_cast<long long>(r.train_samples));
  }
}

// HpT against each GPU baseline, and the one it saves least time against.
void PrintBaselines(const std::vector<Row>& rows) {
  std::printf("\nHpT against each GPU baseline (projected time / energy, means over the seeds; "
              "GPU steps run the same way in HpT's full phase):\n");
  const std::vector<GpuBaseline::Name> all = AllGpuBaselines();
  std::printf("%-8s", "app");
  for (GpuBaseline::Name b : all) std::printf(" %-16s", GpuBaselineName(b).c_str());
  std::printf(" %s\n", "least saving in time (the bar the claim must clear)");
  for (const Row& r : rows) {
    if (!r.error.empty() || r.baselines.size() != all.size()) continue;
    std::printf("%-8s", r.app.c_str());
    // The baseline HpT saves least time against.
    size_t fastest = 0;
    for (size_t i = 0; i < r.baselines.size(); ++i) {
      const auto& [t, e] = r.baselines[i];
      std::printf(" %-16s", absl::StrFormat("%.2fx / %.2fx", t, e).c_str());
      if (t < r.baselines[fastest].first) fastest = i;
    }
    std::printf(" %s, %.2fx\n", GpuBaselineName(all[fastest]).c_str(),
                r.baselines[fastest].first);
  }
  for (GpuBaseline::Name b : AllGpuBaselines()) std::printf("  %s\n", GpuBaselineSource(b).c_str());
}

// The paper's claim, the chip settings that reach it, and how the table
// was run.
void PrintNotes(const std::vector<Row>& rows) {
  std::printf("\nThe paper (Dahal et al., TPDS 2025): up to 11.9x less time and 12.05x less "
              "energy than GPU-only training. Chip configurations that reach them (paper "
              "baseline; one setting moved at a time, the rest as run):\n");
  for (const Row& r : rows) {
    for (const std::string& t : r.targets) std::printf("  %-8s %s\n", r.app.c_str(), t.c_str());
  }
  std::printf("Switch and RMSE: batch %d, the paper's k, thresholds and recipe (rates x "
              "sqrt(%d)), switch rule %s, seeds 42-%d; 'devices': the LoRA phase from the same "
              "switch through the ReRAM (read noise %g, programming noise %g levels) and "
              "systolic models; 'p worse': paired one-sided t-test of the devices' RMSE above "
              "full's; small models:",
              absl::GetFlag(FLAGS_batch), absl::GetFlag(FLAGS_batch),
              absl::GetFlag(FLAGS_switch_rule).empty() ? "default"
                                                        : absl::GetFlag(FLAGS_switch_rule).c_str(),
              41 + absl::GetFlag(FLAGS_seeds),
              absl::GetFlag(FLAGS_reram_read_noise), absl::GetFlag(FLAGS_reram_program_noise));
  for (const Row& r : rows) std::printf(" %s %s;", r.app.c_str(), r.small.c_str());
}

int Main() {
  const std::string dir = ResolveDataDir(absl::GetFlag(FLAGS_data_dir));
  if (IsChildTask()) return WriteChildResult(QualityOfSeed(dir, ChildTask()));
  const auto start = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  for (absl::string_view app : absl::StrSplit(absl::GetFlag(FLAGS_apps), ',')) {
    Row row;
    row.app = std::string(app);
    rows.push_back(row);
  }
  std::fprintf(stderr, "== switch and quality: %d seeds of %zu applications, %d at a time\n",
               absl::GetFlag(FLAGS_seeds), rows.size(), absl::GetFlag(FLAGS_parallel));
  MeasureQuality(dir, rows);
  for (Row& row : rows) {
    if (!row.error.empty()) continue;
    std::fprintf(stderr, "== %s: the paper-size cost run\n", row.app.c_str());
    if (absl::Status s = Measure(dir, &row); !s.ok()) row.error = std::string(s.message());
  }
  PrintQuality(rows);
  PrintSkill(rows);
  PrintSteps(rows);
  PrintBaselines(rows);
  PrintNotes(rows);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\nMeasured in %.1f min of wall time.\n", wall_s / 60);
  std::printf("Steps: the paper's size at batch 1, GPU-only step = full phase without "
              "trials; time and energy projected: switch after the same number of samples, "
              "as many trial windows as the seed ran, then LoRA steps.\n");
  return 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  hpt::SaveArgv(argc, argv);
  absl::ParseCommandLine(argc, argv);
  hpt::KeepLargeBuffersOnTheHeap();
  return hpt::Main();
}
