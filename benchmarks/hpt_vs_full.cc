// Quality and cost of HpT against full-parameter training on real data,
// over several training seeds. For each seed the same job (preset, epochs,
// split, the preset's paper recipe) trains through the coordinator's
// trainer with real worker executors in this process (a GPU worker running
// LibTorch, a ReRAM and a systolic worker running the device models):
//  - full-parameter only;
//  - HpT with its LoRA phase on the GPU worker (LibTorch fp32);
//  - the same HpT job from its switch on, with the LoRA phase on the
//    devices (--placement, paper: frozen weights through the ReRAM model's
//    8-bit cells and 5-bit ADCs, the adapters and the rest through the
//    systolic array), resumed from the switch's checkpoint.
// Prints each seed's switch and RMSE, then the switch's median and range,
// the RMSE ratios' mean and sd with a paired test of "HpT is worse", and
// the time and energy ratios' mean and range.
//
//   bazel run -c opt //benchmarks:hpt_vs_full -- --dataset=wind --seeds=5
//       [--data_dir=../shared/data] [--switch_rule=consecutive] ...
//
// Splits follow the paper's code (../shared/data/README): wind test rows
// 480-2120, train on both sides; weather test year 2020; covid train
// Date < 209.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmarks/bench_jobs.h"
#include "benchmarks/seed_stats.h"
#include "common/process_setup.h"
#include "common/status_macros.h"
#include "coordinator/spec/job_spec.h"
#include "cost/switch_diagnosis.h"
#include "models/model_config.h"

ABSL_FLAG(std::string, dataset, "wind", "wind, weather, covid or swe.");
ABSL_FLAG(std::string, data_dir, "../shared/data", "The real data sets' folder.");
ABSL_FLAG(std::string, preset, "",
          "Model preset (its window k and recipe are the paper's); empty: the data set's own.");
ABSL_FLAG(int, d_model, 64, "d_model override (0: the preset's; wind's 512 is slow on CPU).");
ABSL_FLAG(int, layers, 2, "Encoder layers override (0: the preset's).");
ABSL_FLAG(int, heads, 0,
          "Attention heads override (0: d_model over the paper model's head width).");
ABSL_FLAG(int, epochs, 0, "Epochs of each run (0: SmallModelEpochs, below).");
ABSL_FLAG(int, batch, 32,
          "Batch size (the paper's is 1; its learning rates are scaled by sqrt(batch)).");
ABSL_FLAG(double, lr, 0, "Full-phase learning rate (0: the recipe's, scaled).");
ABSL_FLAG(double, lora_lr, 0, "LoRA-phase learning rate (0: the recipe's, scaled).");
ABSL_FLAG(int64_t, check_window_samples, 0,
          "Phase-controller window k in samples (0: the preset's, the paper's).");
ABSL_FLAG(double, loss_threshold, 0, "Loss-test threshold (0: the paper's 0.1).");
ABSL_FLAG(double, weight_threshold, 0, "Weight-test threshold (0: the paper's 0.01).");
ABSL_FLAG(std::string, switch_rule, "",
          "paper, consecutive, trend or plateau, with +margin for the margin trial test "
          "(empty: the service's default).");
ABSL_FLAG(int, consecutive_checks, 0, "Passing checks in a row under consecutive (0: 3).");
ABSL_FLAG(std::string, placement, "paper",
          "The devices' LoRA-phase placement: paper or reram_full; none: skip that run.");
ABSL_FLAG(double, reram_read_noise, 0,
          "ReRAM read noise sigma (conductance levels) in the devices run.");
ABSL_FLAG(double, reram_program_noise, 0,
          "ReRAM programming noise sigma (conductance levels) in the devices run.");
ABSL_FLAG(int, threads, 0, "LibTorch threads (0: default).");
ABSL_FLAG(uint64_t, seed, 42, "The first training seed; the others follow it.");
ABSL_FLAG(int, seeds, 5, "Training seeds.");
ABSL_FLAG(bool, skip_full, false, "Run only the HpT side (for timing); no ratios.");

namespace hpt {
namespace {

struct SeedResult {
  uint64_t seed = 0;
  int64_t switch_step = -1;
  double rmse_full = 0, rmse_gpu = 0, rmse_devices = 0;
  double time_ratio = 0, energy_ratio = 0;  // the devices run's, vs GPU-only
  double wall_s = 0;
  bool no_lora_steps = false;  // switched at the last step
  std::vector<std::string> closest;  // a run that never switched: how close it came
};

absl::StatusOr<JobSpec> BaseSpec(const std::string& dataset, const std::string& dir) {
  JobSpec spec;
  spec.set_name("hpt-vs-full-" + dataset);
  ModelSpec& model = *spec.mutable_model();
  model.set_preset(absl::GetFlag(FLAGS_preset).empty() ? dataset : absl::GetFlag(FLAGS_preset));
  ASSIGN_OR_RETURN(ModelConfig preset, PresetModelConfig(model.preset()));
  model.set_d_model(absl::GetFlag(FLAGS_d_model));
  model.set_num_layers(absl::GetFlag(FLAGS_layers));
  model.set_num_heads(absl::GetFlag(FLAGS_heads) > 0
                          ? absl::GetFlag(FLAGS_heads)
                          : SmallModelHeads(preset, absl::GetFlag(FLAGS_d_model)));
  TrainingSpec& t = *spec.mutable_training();
  t.set_epochs(absl::GetFlag(FLAGS_epochs) > 0 ? absl::GetFlag(FLAGS_epochs)
                                               : SmallModelEpochs(model.preset()));
  t.set_batch_size(absl::GetFlag(FLAGS_batch));
  t.mutable_optimizer()->set_learning_rate(absl::GetFlag(FLAGS_lr));
  HptSpec& h = *spec.mutable_hpt();
  h.mutable_lora_optimizer()->set_learning_rate(absl::GetFlag(FLAGS_lora_lr));
  h.set_check_window_samples(absl::GetFlag(FLAGS_check_window_samples));
  h.set_loss_threshold(absl::GetFlag(FLAGS_loss_threshold));
  h.set_weight_threshold(absl::GetFlag(FLAGS_weight_threshold));
  RETURN_IF_ERROR(SetRuleName(absl::GetFlag(FLAGS_switch_rule), h));
  h.set_consecutive_checks(absl::GetFlag(FLAGS_consecutive_checks));
  const std::string placement = absl::GetFlag(FLAGS_placement);
  Placement::Name name = Placement::paper;
  if (placement != "none" && (!Placement::Name_Parse(placement, &name) ||
                              name == Placement::PLACEMENT_UNSPECIFIED || name == Placement::gpu)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--placement '", placement, "' is not paper, reram_full or none"));
  }
  h.set_placement(name);
  RETURN_IF_ERROR(SetRealData(dataset, dir, &spec));
  return NormalizeJobSpec(spec);
}

absl::StatusOr<SeedResult> RunSeed(JobSpec spec, uint64_t seed, const DeviceNoise& noise) {
  SeedResult r;
  r.seed = seed;
  spec.mutable_training()->set_seed(seed);
  const std::string label = absl::StrCat("seed ", seed);
  const int threads = absl::GetFlag(FLAGS_threads);
  if (!absl::GetFlag(FLAGS_skip_full)) {
    ASSIGN_OR_RETURN(BenchRun full,
                     RunInProcess(spec, TrainingMode::full, label + " full", threads));
    r.rmse_full = full.job.test_metrics().rmse();
    r.wall_s += full.wall_s;
  }
  const bool devices = absl::GetFlag(FLAGS_placement) != "none";
  ASSIGN_OR_RETURN(HptPair pair, RunHptOnGpuAndDevices(spec, label, threads, devices, noise));
  r.switch_step = pair.gpu.job.hpt().switch_step();
  r.rmse_gpu = pair.gpu.job.test_metrics().rmse();
  r.wall_s += pair.gpu.wall_s + pair.devices.wall_s;
  const BenchRun& hpt = pair.switched && devices ? pair.devices : pair.gpu;
  r.no_lora_steps = pair.no_lora_steps;
  r.rmse_devices = pair.switched && devices ? hpt.job.test_metrics().rmse() : r.rmse_gpu;
  r.closest = ClosestApproach(pair.gpu.job);
  r.time_ratio = hpt.job.hpt().comparison().time_ratio();
  r.energy_ratio = hpt.job.hpt().comparison().energy_ratio();
  return r;
}

// Returns the devices run's mean RMSE ratio (0 with --skip_full).
double PrintSummary(const std::vector<SeedResult>& results) {
  std::vector<int64_t> switches;
  std::vector<double> full, gpu, dev, gpu_ratio, dev_ratio, time, energy;
  for (const SeedResult& r : results) {
    switches.push_back(r.switch_step);
    full.push_back(r.rmse_full);
    gpu.push_back(r.rmse_gpu);
    dev.push_back(r.rmse_devices);
    gpu_ratio.push_back(r.rmse_full > 0 ? r.rmse_gpu / r.rmse_full : 0);
    dev_ratio.push_back(r.rmse_full > 0 ? r.rmse_devices / r.rmse_full : 0);
    time.push_back(r.time_ratio);
    energy.push_back(r.energy_ratio);
  }
  std::printf("\nswitch step: %s\n", FormatSwitches(SummarizeSwitches(switches)).c_str());
  if (absl::GetFlag(FLAGS_skip_full)) {
    std::printf("(--skip_full: no full-parameter runs, so no RMSE ratios)\n");
  } else {
    for (const auto& [name, ratios, rmse] :
         {std::tuple{"LoRA on GPU", &gpu_ratio, &gpu}, std::tuple{"on devices", &dev_ratio, &dev}}) {
      const Spread s = Summarize(*ratios);
      const PairedTest p = PairedGreaterTest(*rmse, full);
      std::printf("RMSE HpT / full, %-11s: mean %.4f +- %.4f (sd), range %.4f-%.4f; paired "
                  "t-test of HpT worse: t %.3g, one-sided p %.3g\n",
                  name, s.mean, s.sd, s.min, s.max, p.t, p.p_one_sided);
    }
  }
  const Spread t = Summarize(time), e = Summarize(energy);
  std::printf("time vs GPU-only (paper baseline, projected): mean %.3gx, range %.3g-%.3gx; "
              "energy: mean %.3gx, range %.3g-%.3gx\n",
              t.mean, t.min, t.max, e.mean, e.min, e.max);
  return absl::GetFlag(FLAGS_skip_full) ? 0 : Summarize(dev_ratio).mean;
}

int Main() {
  const std::string dataset = absl::GetFlag(FLAGS_dataset);
  absl::StatusOr<JobSpec> spec = BaseSpec(dataset, ResolveDataDir(absl::GetFlag(FLAGS_data_dir)));
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  const DeviceNoise noise{absl::GetFlag(FLAGS_reram_read_noise),
                          absl::GetFlag(FLAGS_reram_program_noise)};
  const ModelSpec& m = spec->model();
  const TrainingSpec& t = spec->training();
  std::printf("hpt_vs_full: %s, preset %s (d_model %d, %d layers, %d heads), %d epochs, batch %d, "
              "%d seeds from %llu, switch rule %s, devices run: %s (ReRAM read noise %g, "
              "programming noise %g)\n",
              dataset.c_str(), m.preset().c_str(), m.d_model(), m.num_layers(), m.num_heads(),
              t.epochs(), t.batch_size(), absl::GetFlag(FLAGS_seeds),
              static_cast<unsigned long long>(absl::GetFlag(FLAGS_seed)),
              RuleName(spec->hpt()).c_str(), absl::GetFlag(FLAGS_placement).c_str(),
              noise.read_sigma, noise.program_sigma);
  std::printf("full phase: %s\nLoRA phase: %s\n", t.learning_rate_rule().c_str(),
              spec->hpt().lora_learning_rate_rule().c_str());
  std::printf("\n%-6s %-8s %10s %12s %12s %10s %10s %8s %8s %8s\n", "seed", "switch", "RMSE full",
              "HpT (GPU)", "HpT (dev)", "ratio GPU", "ratio dev", "time x", "energy x", "wall s");
  std::vector<SeedResult> results;
  for (int i = 0; i < absl::GetFlag(FLAGS_seeds); ++i) {
    absl::StatusOr<SeedResult> r = RunSeed(*spec, absl::GetFlag(FLAGS_seed) + i, noise);
    if (!r.ok()) {
      std::fprintf(stderr, "seed %llu failed: %s\n",
                   static_cast<unsigned long long>(absl::GetFlag(FLAGS_seed) + i),
                   std::string(r.status().message()).c_str());
      return 1;
    }
    std::printf("%-6llu %-8s %10.4f %12.4f %12.4f %10.4f %10.4f %8.3g %8.3g %8.1f%s\n",
                static_cast<unsigned long long>(r->seed),
                r->switch_step < 0 ? "none" : std::to_string(r->switch_step).c_str(),
                r->rmse_full, r->rmse_gpu, r->rmse_devices,
                r->rmse_full > 0 ? r->rmse_gpu / r->rmse_full : 0,
                r->rmse_full > 0 ? r->rmse_devices / r->rmse_full : 0, r->time_ratio,
                r->energy_ratio, r->wall_s,
                r->no_lora_steps ? "  (switch at the last step: no LoRA step)" : "");
    for (const std::string& line : r->closest) std::printf("    %s\n", line.c_str());
    std::fflush(stdout);
    results.push_back(*r);
  }
  const double ratio = PrintSummary(results);
  if (absl::GetFlag(FLAGS_skip_full)) return 0;
  std::printf("mean RMSE HpT (devices) / full: %.4f (goal <= 1.05): %s\n", ratio,
              ratio <= 1.05 ? "PASS" : "FAIL");
  return ratio <= 1.05 ? 0 : 3;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  absl::ParseCommandLine(argc, argv);
  hpt::KeepLargeBuffersOnTheHeap();
  return hpt::Main();
}
