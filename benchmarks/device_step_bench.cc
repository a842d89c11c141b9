// Where a training step's wall time goes, full phase against LoRA phase,
// and how long evaluating the test split takes, on real data through the
// coordinator's trainer with real worker executors in this process (the
// LibTorch GPU worker, the ReRAM and systolic device models). The phase
// controller's thresholds are opened so the job switches after two windows
// of `--check_window_steps`; every figure below is measured in this run:
//   - the mean and median wall time of a full-phase step (GPU worker) and of a
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
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/bench_jobs.h"
#include "benchmarks/step_timer.h"
#include "common/enum_names.h"
#include "common/process_setup.h"
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
  const auto start = hpt::Clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(hpt::Clock::now() - start).count();
  };
  hpt::StepTimer timer(seconds());
  absl::StatusOr<hpt::BenchRun> run =
      hpt::RunInProcess(*spec, hpt::TrainingMode::hpt, "bench", absl::GetFlag(FLAGS_threads),
                        [&](const hpt::TrainerUpdate& u) { timer.Observe(u, seconds()); });
  if (!run.ok()) {
    std::fprintf(stderr, "device_step_bench: %s\n", std::string(run.status().message()).c_str());
    return 1;
  }
  std::printf("%s preset on real data, batch %d, LoRA placement %s, %.1f s in all\n",
              absl::GetFlag(FLAGS_preset).c_str(), absl::GetFlag(FLAGS_batch),
              absl::GetFlag(FLAGS_placement).c_str(), seconds());
  timer.Report(run->job.test_metrics().values());
  return 0;
}
