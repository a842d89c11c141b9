// Where a training step's wall time goes, full phase against LoRA phase,
// and how long evaluating the test split takes, on real data through the
// coordinator's trainer with real worker executors in this process (the
// LibTorch GPU worker, the ReRAM and systolic device models). The phase
// controller's thresholds are opened so the job switches after two windows
// of `--check_window_steps`; every figure below is measured in this run:
//   - the mean wall time of a full-phase step (GPU worker) and of a
//     LoRA-phase step (placement paper: frozen weights on ReRAM, the rest on
//     systolic; placement gpu: LoRA on the GPU worker), their ratio, and
//     each step's split into compute per device kind (the tasks' measured
//     time) and the rest (coordinator, serialisation; over gRPC, RPCs too);
//   - the wall time of the last epoch's evaluation (in the LoRA phase).
//
//   bazel run -c opt //benchmarks:device_step_bench -- --batch=1 --placement=paper
//   bazel run -c opt //benchmarks:device_step_bench -- --batch=32 --placement=gpu --eval=false
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/bench_jobs.h"
#include "common/device_kind.h"
#include "common/enum_names.h"
#include "common/process_setup.h"
#include "common/training_phase.h"
#include "coordinator/training/trainer.h"

ABSL_FLAG(std::string, data_dir, "../shared/data", "The real data sets' folder.");
ABSL_FLAG(std::string, preset, "wind", "Model preset (the real data set of the same name).");
ABSL_FLAG(int, batch, 1, "Batch size.");
ABSL_FLAG(std::string, placement, "paper", "LoRA-phase placement: paper or gpu.");
ABSL_FLAG(int, steps, 8, "Steps per epoch (two epochs: the switch falls in the first).");
ABSL_FLAG(int, check_window_steps, 2, "Phase-controller check window in steps.");
ABSL_FLAG(bool, eval, true, "Evaluate on the whole test split (false: 1 sample).");
ABSL_FLAG(int, eval_batch, 0, "Samples per evaluation request (0: the trainer's automatic size).");
ABSL_FLAG(int, threads, 2, "LibTorch threads of the GPU worker.");

namespace hpt {
namespace {

using Clock = std::chrono::steady_clock;

struct Totals {
  int steps = 0;
  double wall_s = 0;
  std::map<std::string, double> compute_s;  // by device kind
};

std::map<std::string, double> MeasuredByKind(const TrainerUpdate& u) {
  std::map<std::string, double> by_kind;
  for (const DeviceCost& d : u.device_costs) by_kind[KindName(d.kind())] += d.cost().measured_s();
  return by_kind;
}

void Print(const char* label, const Totals& t) {
  if (t.steps == 0) {
    std::printf("%-10s no steps measured\n", label);
    return;
  }
  const double wall = t.wall_s / t.steps;
  double compute = 0;
  std::printf("%-10s %d steps, %.3f s wall per step:", label, t.steps, wall);
  for (const auto& [kind, s] : t.compute_s) {
    std::printf(" %s compute %.3f s,", kind.c_str(), s / t.steps);
    compute += s / t.steps;
  }
  std::printf(" rest (coordinator, serialisation) %.3f s\n", wall - compute);
}

// The bench's job: the preset on its real data, thresholds that never
// switch on their own and a trial on every rising loss. INVALID_ARGUMENT
// names a bad flag.
absl::StatusOr<JobSpec> BenchSpec() {
  JobSpec spec;
  spec.set_name("device-step-bench");
  if (absl::Status s = SetRealData(absl::GetFlag(FLAGS_preset),
                                   ResolveDataDir(absl::GetFlag(FLAGS_data_dir)), &spec);
      !s.ok()) {
    return s;
  }
  spec.mutable_model()->set_preset(absl::GetFlag(FLAGS_preset));
  TrainingSpec& t = *spec.mutable_training();
  t.set_epochs(2);
  t.set_batch_size(absl::GetFlag(FLAGS_batch));
  t.set_max_steps_per_epoch(absl::GetFlag(FLAGS_steps));
  t.set_checkpoint_every(-1);
  t.set_eval_batch_size(absl::GetFlag(FLAGS_eval_batch));
  if (!absl::GetFlag(FLAGS_eval)) t.set_max_test_samples(1);
  HptSpec& h = *spec.mutable_hpt();
  h.set_check_window_steps(absl::GetFlag(FLAGS_check_window_steps));
  h.set_loss_threshold(1e9);
  h.set_weight_threshold(1e9);
  h.set_trial_on_rising_loss(true);
  Placement::Name placement{};  // set by the parse below
  if (absl::Status s = ParseEnumName("--placement", absl::GetFlag(FLAGS_placement), &placement);
      !s.ok()) {
    return s;
  }
  h.set_placement(placement);
  return spec;
}

// Times the trainer's updates: each whole step in one phase (not an
// epoch's first, which follows the evaluation, nor the one that switched)
// by phase, and the last evaluation.
class StepTimer {
 public:
  void Observe(const TrainerUpdate& u) {
    const Clock::time_point now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_).count();
    std::map<std::string, double> measured = MeasuredByKind(u);
    const std::string& phase = PhaseName(u.hpt.phase());
    if (u.epoch_losses.size() != last_epochs_) {
      // The epoch's evaluation just ended.
      eval_s_ = dt;
      eval_phase_ = phase;
      last_epochs_ = u.epoch_losses.size();
    } else if (u.progress.step() == last_step_ + 1 && last_step_ >= 0 && phase == last_phase_) {
      Totals& totals = by_phase_[phase];
      ++totals.steps;
      totals.wall_s += dt;
      for (const auto& [kind, s] : measured) totals.compute_s[kind] += s - last_measured_[kind];
    }
    last_step_ = u.progress.step();
    last_phase_ = phase;
    last_measured_ = std::move(measured);
    last_ = now;
  }

  // The phases' step times and the last evaluation's.
  void Report(int64_t test_values) {
    Print("full", by_phase_["full"]);
    Print("lora", by_phase_["lora"]);
    const Totals& full = by_phase_["full"];
    const Totals& lora = by_phase_["lora"];
    if (full.steps > 0 && lora.steps > 0) {
      const double f = full.wall_s / full.steps, l = lora.wall_s / lora.steps;
      std::printf(
          "LoRA-phase step / full-phase step wall time: %.2f (full is %.2fx the LoRA step)\n",
          l / f, f / l);
    }
    std::printf("last evaluation (%s phase, %lld test values): %.2f s\n", eval_phase_.c_str(),
                static_cast<long long>(test_values), eval_s_);
  }

 private:
  std::map<std::string, Totals> by_phase_;
  Clock::time_point last_ = Clock::now();
  int64_t last_step_ = -1;
  size_t last_epochs_ = 0;
  std::string last_phase_;
  std::map<std::string, double> last_measured_;
  double eval_s_ = 0;
  std::string eval_phase_;
};

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  absl::ParseCommandLine(argc, argv);
  hpt::KeepLargeBuffersOnTheHeap();
  absl::StatusOr<hpt::JobSpec> spec = hpt::BenchSpec();
  if (!spec.ok()) {
    std::fprintf(stderr, "device_step_bench: %s\n", std::string(spec.status().message()).c_str());
    return 2;
  }
  hpt::StepTimer timer;
  const auto start = hpt::Clock::now();
  absl::StatusOr<hpt::BenchRun> run =
      hpt::RunInProcess(*spec, hpt::TrainingMode::hpt, "bench", absl::GetFlag(FLAGS_threads),
                        [&](const hpt::TrainerUpdate& u) { timer.Observe(u); });
  if (!run.ok()) {
    std::fprintf(stderr, "device_step_bench: %s\n", std::string(run.status().message()).c_str());
    return 1;
  }
  std::printf("%s preset on real data, batch %d, LoRA placement %s, %.1f s in all\n",
              absl::GetFlag(FLAGS_preset).c_str(), absl::GetFlag(FLAGS_batch),
              absl::GetFlag(FLAGS_placement).c_str(),
              std::chrono::duration<double>(hpt::Clock::now() - start).count());
  timer.Report(run->job.test_metrics().values());
  return 0;
}
