// switch_frontier: where should HpT switch, and do the switch rules land
// there? Per application and training seed, on the benchmarks' small model
// with the paper's recipe:
//  1. one full-parameter run that keeps a checkpoint at every check
//     window's end and, from the third window on, trains a fresh LoRA
//     trial copy over each window beside the full model (the inputs any
//     rule's controller would read: SamplingPolicy, switch_policy.h);
//  2. the frontier: the switch forced at a grid of steps (--grid percents
//     of the run, dense early, at least one window, on window ends),
//     each resumed from that checkpoint with its LoRA phase on the GPU
//     worker to the run's end: its test RMSE, and its time and energy
//     against GPU-only projected to the paper's length under every GPU
//     baseline (paper_projection.h);
//  3. the knee: the earliest grid step whose RMSE is within --knee_tolerance
//     (1 %) of the best point's, the never-switched run counted as a point;
//  4. every rule of --rules replayed on the same run's inputs
//     (PhaseController ReplaySwitch: exact, as the trial copies are those
//     the rule's trials would train), and its switch run like a frontier
//     point: its switch step, distance to the knee, RMSE, time;
//  5. one point per application (the first seed's knee) again with the
//     LoRA phase on the devices (ReRAM and systolic models), beside the
//     GPU's RMSE at the same point.
// Prints each seed, the rules' table, the default the stated criterion
// picks (docs/method.md "Choosing the default"), and writes --out_dir:
// frontier.tsv (every point), frontier-<app>.svg and index.html.
//
//   bazel run -c opt //benchmarks:switch_frontier -- --data_dir=../shared/data
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/bench_jobs.h"
#include "benchmarks/child_tasks.h"
#include "benchmarks/frontier_report.h"
#include "benchmarks/frontier_runs.h"
#include "benchmarks/paper_projection.h"
#include "benchmarks/seed_stats.h"
#include "common/gpu_baseline.h"
#include "common/process_setup.h"
#include "common/status_macros.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/training/phase_controller.h"
#include "cost/record_costing.h"

ABSL_FLAG(std::string, data_dir, "../shared/data", "The real data sets' folder.");
ABSL_FLAG(std::string, apps, "swe,weather,covid,wind", "Applications, in order.");
ABSL_FLAG(int, first_seed, 42,
          "The first training seed; the rule was designed on 42-46, so 47 on is out of sample.");
ABSL_FLAG(int, seeds, 5, "Training seeds per application (--first_seed, the next, ...).");
ABSL_FLAG(std::string, grid, "1,2,5,10,20,40,60,80",
          "Frontier points, percent of the run, each moved to the check window's end at or "
          "after it (at least one window): dense early, where knees are.");
ABSL_FLAG(bool, select_best_validation, true,
          "Every run holds out a tenth of its training rows and ends with its best-validation "
          "epoch (training.select: best_validation): the never-switched point is then the "
          "early-stopped full-parameter baseline, and each switched run is selected the same "
          "way. False: every run keeps its last epoch.");
ABSL_FLAG(double, knee_tolerance, 0.01,
          "The knee: the earliest grid step whose RMSE is within this fraction of the best.");
ABSL_FLAG(std::string, rules,
          "paper,consecutive,trend,plateau,plateau+margin,plateau+none,layerwise",
          "Switch rules: hpt.switch_rule[+hpt.trial_test], replayed on each seed's full run "
          "(layerwise, whose layers switch one by one, runs as a job of its own).");
ABSL_FLAG(std::string, plot_rule, "", "The rule marked in the plots (empty: the default chosen).");
ABSL_FLAG(int, parallel, 2,
          "(application, seed) runs at once, each a child process of this binary (LibTorch's "
          "random generator is global, so two runs cannot share a process).");
ABSL_FLAG(int, threads, 1, "LibTorch's intra-op threads in each run (0: its default).");
ABSL_FLAG(std::string, device, "cpu",
          "Where each run's GPU worker trains: cpu, or cuda / cuda:N where a GPU is at hand "
          "(larger models, --layers and --d_model, need one).");
ABSL_FLAG(int, epochs, 0, "Epochs of the small model's runs (0: SmallModelEpochs).");
ABSL_FLAG(int, layers, 2, "Layers of the small model.");
ABSL_FLAG(int, d_model, 64, "d_model of the small model.");
ABSL_FLAG(int, batch, 32, "Batch size of the small model's runs.");
ABSL_FLAG(int, cost_steps, 20, "Steps of each application's paper-size cost run.");
ABSL_FLAG(bool, devices_point, true,
          "Run the first seed's knee again with the LoRA phase on the devices.");
ABSL_FLAG(std::string, out_dir, "frontier", "Where the TSV, the SVGs and index.html go.");
ABSL_FLAG(bool, from_seeds, false,
          "Train nothing but the paper-size cost runs: read each seed from --out_dir/seeds "
          "(a finished run's) and print and write everything again.");
ABSL_FLAG(bool, replot, false,
          "Measure nothing: draw the plots again from --out_dir's frontier.tsv (the rule "
          "marked: --plot_rule, default paper).");

namespace hpt {

namespace {

std::vector<std::string> Rules() { return absl::StrSplit(absl::GetFlag(FLAGS_rules), ','); }

// Every frontier run's: --threads and --device, no per-epoch lines, the
// test split scored only at the end.
RunHooks FrontierHooks() {
  RunHooks hooks;
  hooks.threads = absl::GetFlag(FLAGS_threads);
  hooks.device = absl::GetFlag(FLAGS_device);
  hooks.quiet = true;
  hooks.evaluate_every_epoch = false;
  return hooks;
}

// The full run: its RMSE, the controller's inputs and a checkpoint at every
// window's end.
struct FullRun {
  double rmse = 0;
  int64_t total_steps = 0, window = 0;
  std::vector<ControllerSample> samples;
  std::map<int64_t, std::shared_ptr<const Checkpoint>> checkpoints;
};

absl::StatusOr<FullRun> TrainFull(const JobSpec& spec, const std::string& label) {
  FullRun out;
  ASSIGN_OR_RETURN(JobSpec normal, NormalizeJobSpec(spec));
  out.window = normal.hpt().check_window_steps();
  RunHooks hooks = FrontierHooks();
  hooks.checkpoint_every = out.window;
  hooks.on_checkpoint = [&](Checkpoint c) {
    const int64_t at = c.header.step();
    out.checkpoints[at] = std::make_shared<const Checkpoint>(std::move(c));
  };
  SamplingPolicy sampling(out.window);
  hooks.switch_policy = &sampling;
  ASSIGN_OR_RETURN(BenchRun run, RunWithHooks(spec, TrainingMode::hpt, label, hooks));
  out.samples = sampling.samples();
  out.rmse = run.job.test_metrics().rmse();
  out.total_steps = run.job.progress().total_steps();
  return out;
}

// The LoRA phase from the full run's checkpoint at `step` to the end.
absl::StatusOr<double> SwitchAt(const JobSpec& spec, const FullRun& full, int64_t step,
                                const std::string& label) {
  if (step >= full.total_steps) return full.rmse;
  auto it = full.checkpoints.find(step);
  if (it == full.checkpoints.end()) {
    return absl::InternalError(absl::StrCat("no checkpoint at step ", step, " (", label, ")"));
  }
  RunHooks hooks = FrontierHooks();
  hooks.resume = it->second;
  SwitchAtResumePolicy at_resume;
  hooks.switch_policy = &at_resume;
  ASSIGN_OR_RETURN(BenchRun run, RunWithHooks(spec, TrainingMode::hpt, label, hooks));
  return run.job.test_metrics().rmse();
}

// A rule that runs as a job of its own (RunsAlone): its switch, each
// layer's, and its test RMSE, selected as the other arms are.
absl::StatusOr<RuleRun> RunRule(const JobSpec& spec, const std::string& rule,
                                const std::string& label) {
  JobSpec r = spec;
  RETURN_IF_ERROR(SetRuleName(rule, *r.mutable_hpt()));
  RunHooks hooks = FrontierHooks();
  ASSIGN_OR_RETURN(BenchRun run, RunWithHooks(r, TrainingMode::hpt, label, hooks));
  RuleRun out;
  out.rule = rule;
  out.step = run.job.hpt().switch_step();
  out.rmse = run.job.test_metrics().rmse();
  out.layer_steps.assign(run.job.hpt().layer_switch_steps().begin(),
                         run.job.hpt().layer_switch_steps().end());
  for (const PhaseEvent& e : run.job.hpt().events()) {
    if (e.kind() != PhaseEvent::CHECK) continue;
    if (out.closest_weight < 0 || e.weight_margin() < out.closest_weight) {
      out.closest_weight = e.weight_margin();
    }
    out.closest_loss = 0;  // the loss is not tested
  }
  return out;
}

// Where each rule would have switched on this run (those that run alone:
// where they did).
absl::StatusOr<std::vector<RuleRun>> ReplayRules(const JobSpec& spec, const FullRun& full,
                                                 const std::string& label) {
  std::vector<RuleRun> out;
  for (const std::string& rule : Rules()) {
    if (RunsAlone(rule)) {
      ASSIGN_OR_RETURN(RuleRun run, RunRule(spec, rule, absl::StrCat(label, " ", rule)));
      out.push_back(std::move(run));
      continue;
    }
    JobSpec r = spec;
    RETURN_IF_ERROR(SetRuleName(rule, *r.mutable_hpt()));
    ASSIGN_OR_RETURN(JobSpec normal, NormalizeJobSpec(r));
    std::vector<ControllerEvent> events;
    RuleRun run;
    run.rule = rule;
    run.step = ReplaySwitch(PhaseControllerOptionsOf(normal.hpt(), full.total_steps),
                            full.samples, &events);
    for (const ControllerEvent& e : events) {
      if (e.kind == ControllerEvent::Kind::kTrialEnd) ++run.trials;
      if (e.kind != ControllerEvent::Kind::kCheck) continue;
      if (run.closest_loss < 0 || e.loss_margin < run.closest_loss) {
        run.closest_loss = e.loss_margin;
      }
      if (run.closest_weight < 0 || e.weight_margin < run.closest_weight) {
        run.closest_weight = e.weight_margin;
      }
    }
    out.push_back(run);
  }
  return out;
}

// The frontier's steps: each --grid percent of `total` steps, moved up to
// a window's end (at least one window), below `total`, once each.
std::vector<int64_t> GridSteps(int64_t total, int64_t window) {
  std::vector<int64_t> steps;
  for (absl::string_view p : absl::StrSplit(absl::GetFlag(FLAGS_grid), ',', absl::SkipEmpty())) {
    double percent = 0;
    if (!absl::SimpleAtod(p, &percent) || percent <= 0) continue;
    const int64_t windows =
        std::max<int64_t>(1, int64_t(std::ceil(percent / 100 * double(total) / double(window))));
    if (windows * window < total) steps.push_back(windows * window);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

// Long because it is one seed's script, in the order of the file's comment.
absl::Status MeasureSeed(const App& app, uint64_t seed, bool devices_point, SeedRun* out) {
  const auto start = std::chrono::steady_clock::now();
  JobSpec spec = app.spec;
  spec.mutable_training()->set_seed(seed);
  const std::string label = absl::StrCat(app.name, " seed ", seed);
  ASSIGN_OR_RETURN(const FullRun full, TrainFull(spec, label + " full"));
  out->seed = seed;
  out->total_steps = full.total_steps;
  out->window = full.window;
  out->rmse_full = full.rmse;
  out->rmse_at[full.total_steps] = full.rmse;
  out->grid = GridSteps(full.total_steps, full.window);
  ASSIGN_OR_RETURN(out->rules, ReplayRules(spec, full, label));
  std::vector<int64_t> points = out->grid;
  for (const RuleRun& r : out->rules) {
    if (r.step >= 0 && !RunsAlone(r.rule)) points.push_back(r.step);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  for (int64_t at : points) {
    if (out->rmse_at.count(at) > 0) continue;
    ASSIGN_OR_RETURN(out->rmse_at[at], SwitchAt(spec, full, at, absl::StrCat(label, " @", at)));
  }
  for (RuleRun& r : out->rules) {
    if (RunsAlone(r.rule)) continue;  // its own run's
    r.rmse = out->rmse_at.at(r.step >= 0 ? std::min(r.step, full.total_steps) : full.total_steps);
  }
  out->knee = KneeOf(*out, absl::GetFlag(FLAGS_knee_tolerance));
  if (devices_point && out->knee < full.total_steps) {
    JobSpec on_devices = spec;
    on_devices.mutable_hpt()->set_placement(Placement::paper);
    out->devices_step = out->knee;
    ASSIGN_OR_RETURN(out->devices_rmse,
                     SwitchAt(on_devices, full, out->knee, label + " devices @knee"));
  }
  out->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return absl::OkStatus();
}

// The small model's job for `app`, its LoRA phase on the GPU worker.
absl::StatusOr<JobSpec> SmallSpec(const std::string& app, const std::string& dir) {
  ASSIGN_OR_RETURN(JobSpec spec, SmallModelSpec(app, dir, absl::GetFlag(FLAGS_layers),
                                                absl::GetFlag(FLAGS_d_model),
                                                absl::GetFlag(FLAGS_batch),
                                                absl::GetFlag(FLAGS_epochs)));
  spec.mutable_hpt()->set_placement(Placement::gpu);
  if (absl::GetFlag(FLAGS_select_best_validation)) {
    spec.mutable_training()->set_select(Selection::best_validation);  // 0.1 held out
  }
  return spec;
}

// Every (application, seed), --parallel child processes at a time.
void MeasureAll(std::vector<App>& apps, const std::string& scratch) {
  std::vector<std::pair<App*, size_t>> slots;
  std::vector<std::string> tasks;
  for (App& app : apps) {
    if (!app.error.empty()) continue;
    app.seeds.resize(size_t(absl::GetFlag(FLAGS_seeds)));
    for (size_t i = 0; i < app.seeds.size(); ++i) {
      const bool devices = absl::GetFlag(FLAGS_devices_point) && i == 0;
      slots.push_back({&app, i});
      tasks.push_back(
          absl::StrCat(app.name, ":", absl::GetFlag(FLAGS_first_seed) + i, ":", devices ? 1 : 0));
    }
  }
  RunChildTasks(tasks, absl::GetFlag(FLAGS_parallel), scratch,
                [&](size_t t, const std::string& text) {
                  auto [app, i] = slots[t];
                  SeedRun& s = app->seeds[i];
                  if (absl::Status st = ParseSeedRun(text, &s); !st.ok()) {
                    s.error = absl::StrCat(tasks[t], ": ", st.message());
                  }
                  std::fprintf(stderr, "  %-8s seed %llu: %s\n", app->name.c_str(),
                               static_cast<unsigned long long>(absl::GetFlag(FLAGS_first_seed) + i),
                               s.error.empty()
                                   ? absl::StrFormat("knee %d of %d steps, RMSE full %.4f, %.0f s",
                                                     s.knee, s.total_steps, s.rmse_full, s.wall_s)
                                         .c_str()
                                   : s.error.c_str());
                });
}

// The seeds a finished run left in `scratch`, read instead of measured.
void ReadSeeds(std::vector<App>& apps, const std::string& scratch) {
  for (App& app : apps) {
    app.seeds.resize(size_t(absl::GetFlag(FLAGS_seeds)));
    for (size_t i = 0; i < app.seeds.size(); ++i) {
      // Named for the child's task (APP-SEED-DEVICES), or APP-SEED.
      const int seed = absl::GetFlag(FLAGS_first_seed) + int(i);
      std::string file = absl::StrCat(scratch, "/", app.name, "-", seed, "-",
                                      absl::GetFlag(FLAGS_devices_point) && i == 0, ".txt");
      if (!std::filesystem::exists(file)) {
        file = absl::StrCat(scratch, "/", app.name, "-", seed, ".txt");
      }
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      if (absl::Status st = ParseSeedRun(text.str(), &app.seeds[i]); !st.ok()) {
        app.seeds[i].error = absl::StrCat(file, ": ", st.message());
      }
    }
  }
}

// The child's side: one seed, its result to --task_out.
int RunTask(const std::string& dir) {
  const std::vector<std::string> task = absl::StrSplit(ChildTask(), ':');
  App app;
  SeedRun s;
  uint64_t seed = 0;
  if (task.size() != 3 || !absl::SimpleAtoi(task[1], &seed)) {
    s.error = "--task must be APP:SEED:DEVICES";
  } else {
    app.name = task[0];
    absl::StatusOr<JobSpec> spec = SmallSpec(app.name, dir);
    absl::Status st = spec.status();
    if (st.ok()) {
      app.spec = *spec;
      st = MeasureSeed(app, seed, task[2] == "1", &s);
    }
    if (!st.ok()) s.error = std::string(st.message());
  }
  return WriteChildResult(FormatSeedRun(s));
}

absl::Status PrepareApp(const std::string& dir, App* app) {
  ASSIGN_OR_RETURN(app->spec, SmallSpec(app->name, dir));
  ASSIGN_OR_RETURN(app->paper_length, PaperLengthOf(app->spec));
  ASSIGN_OR_RETURN(app->reference, ReferenceForecasts(app->spec));
  // The run this frontier trained, not the paper's epochs: a switch at
  // step s keeps s / total of it in the full phase, and the end is "never".
  app->length = app->paper_length;
  app->length.epochs = app->spec.training().epochs();
  ASSIGN_OR_RETURN(std::shared_ptr<const WorkRecord> record,
                   PaperSizeCostRecord(app->name, dir, absl::GetFlag(FLAGS_cost_steps)));
  double fastest_s = 0;
  for (GpuBaseline::Name b : AllGpuBaselines()) {
    ASSIGN_OR_RETURN(JobCosts c, CostOfRecord(*record, {{"gpu_baseline", GpuBaselineName(b)}}));
    if (app->costs.empty() || c.comparison.full_step_s() < fastest_s) {
      fastest_s = c.comparison.full_step_s();
      app->fastest = app->costs.size();
    }
    app->costs.push_back(std::move(c));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace hpt

namespace hpt {
namespace {

int Main() {
  if (absl::GetFlag(FLAGS_replot)) {
    const std::string rule =
        absl::GetFlag(FLAGS_plot_rule).empty() ? "paper" : absl::GetFlag(FLAGS_plot_rule);
    const absl::Status s = ReplotFrontier(ResolveDataDir(absl::GetFlag(FLAGS_out_dir)), rule,
                                          absl::GetFlag(FLAGS_knee_tolerance));
    if (!s.ok()) std::fprintf(stderr, "switch_frontier: %s\n", std::string(s.message()).c_str());
    return s.ok() ? 0 : 1;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string dir = ResolveDataDir(absl::GetFlag(FLAGS_data_dir));
  if (IsChildTask()) return RunTask(dir);
  const std::string out_dir = ResolveDataDir(absl::GetFlag(FLAGS_out_dir));
  std::vector<App> apps;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_apps), ',')) {
    App app;
    app.name = std::string(name);
    std::fprintf(stderr, "== %s: the paper-size cost run\n", app.name.c_str());
    if (absl::Status s = PrepareApp(dir, &app); !s.ok()) app.error = std::string(s.message());
    apps.push_back(std::move(app));
  }
  std::fprintf(stderr, "== the frontiers: %d seeds of %zu applications, %d at a time\n",
               absl::GetFlag(FLAGS_seeds), apps.size(), absl::GetFlag(FLAGS_parallel));
  const std::string scratch = out_dir + "/seeds";
  if (absl::GetFlag(FLAGS_from_seeds)) {
    ReadSeeds(apps, scratch);
  } else {
    MeasureAll(apps, scratch);
  }
  const std::vector<std::string> rules = Rules();
  PrintFrontier(apps, rules);
  std::string why;
  const std::string chosen = ChooseDefault(apps, rules, &why);
  std::printf("\nThe default by the stated criterion (docs/method.md \"Choosing the default\"): "
              "%s\n%s",
              chosen.empty() ? "none qualifies, so the paper's rule stays" : chosen.c_str(),
              why.c_str());
  const std::string adopted = chosen.empty() ? "paper" : chosen;
  const auto at = std::find(rules.begin(), rules.end(), adopted) - rules.begin();
  if (size_t(at) < rules.size()) PrintRuleAtPaperLength(apps, size_t(at));
  const std::string plot_rule = !absl::GetFlag(FLAGS_plot_rule).empty()
                                    ? absl::GetFlag(FLAGS_plot_rule)
                                    : (chosen.empty() ? "paper" : chosen);
  WriteFrontierFiles(apps, rules, plot_rule, out_dir);
  const double wall_min =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;
  std::printf("\nSmall models: %d x %d at batch %d, the recipes' rates x sqrt(%d), "
              "SmallModelEpochs; time: these runs' epochs at batch 1 at the paper's model "
              "size; grid at %s %% of the run (window ends), knee within %g %% of the "
              "best point; %s; LoRA phase on the GPU worker (fp32); seeds %d-%d. Files: %s. "
              "%s %.1f min of wall time.\n",
              absl::GetFlag(FLAGS_layers), absl::GetFlag(FLAGS_d_model),
              absl::GetFlag(FLAGS_batch), absl::GetFlag(FLAGS_batch),
              absl::GetFlag(FLAGS_grid).c_str(), absl::GetFlag(FLAGS_knee_tolerance) * 100,
              absl::GetFlag(FLAGS_select_best_validation)
                  ? "every run ends with its best-validation epoch (a tenth of the training rows "
                    "held out), the never-switched one the early-stopped baseline"
                  : "every run keeps its last epoch",
              absl::GetFlag(FLAGS_first_seed),
              absl::GetFlag(FLAGS_first_seed) + absl::GetFlag(FLAGS_seeds) - 1, out_dir.c_str(),
              absl::GetFlag(FLAGS_from_seeds) ? "Read from the seeds' files (their own run's "
                                                "time is above each seed) in"
                                              : "Measured in",
              wall_min);
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
