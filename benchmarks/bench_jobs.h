// Shared by the benchmarks: a job's spec for each real data set (the
// paper's splits), and a job run in one process through the trainer with
// real worker executors (LibTorch GPU worker, ReRAM and systolic models).
#ifndef HPT_BENCHMARKS_BENCH_JOBS_H_
#define HPT_BENCHMARKS_BENCH_JOBS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/training/checkpoint.h"
#include "coordinator/training/trainer.h"
#include "proto/common.pb.h"
#include "proto/job_service.pb.h"

namespace hpt {

// Sets spec.data for `dataset` (wind, weather, covid, swe) read from `dir`
// (the real data folder), with the paper's split and input window.
absl::Status SetRealData(const std::string& dataset, const std::string& dir, JobSpec* spec);

// `dir` as the user meant it: a relative path under `bazel run` is taken
// from where they ran it.
std::string ResolveDataDir(const std::string& dir);

// The benchmarks' small model (d_model x layers instead of the paper's
// 512 x 12): its heads keep the paper model's head width (32 for swe and
// weather, 64 for covid and wind), so swe's 323 x 323 attention is not 16
// heads of 4 features.
int SmallModelHeads(const ModelConfig& preset, int d_model);

// Epochs of the small model's runs at batch 32: the paper's for swe (24)
// and weather (22; 2-4 s an epoch here), fewer for covid (8 of 20) and
// wind (10 of 24) so that five seeds of the four applications fit 90
// minutes on two cores; hpt_vs_full --epochs and paper_table --epochs set
// others.
int SmallModelEpochs(const std::string& preset);

// The small model's job for `app` on the real data in `dir`: the preset's
// recipe at `batch`, `layers` x `d_model` with SmallModelHeads, `epochs`
// (0: SmallModelEpochs), placement paper.
absl::StatusOr<JobSpec> SmallModelSpec(const std::string& app, const std::string& dir,
                                       int layers, int d_model, int batch, int epochs);

// The ReRAM noise a devices run reads with (ReramConfig's sigmas, in
// conductance levels).
struct DeviceNoise {
  double read_sigma = 0, program_sigma = 0;
};

struct BenchRun {
  Job job;
  double wall_s = 0;
};

// Trains `spec` with hpt.mode `mode` (full or hpt) on CPU; `label`
// prefixes the per-epoch progress lines on stderr. `observe`, if given,
// sees every progress update (after each step, and after each epoch's
// evaluation) as it happens.
// `resume`, if given, is a checkpoint of the same job to go on from (with
// `spec`'s placement); `on_checkpoint` sees the switch's checkpoint.
absl::StatusOr<BenchRun> RunInProcess(const JobSpec& spec, TrainingMode::Name mode,
                                      const std::string& label, int threads = 0,
                                      std::function<void(const TrainerUpdate&)> observe = nullptr,
                                      std::shared_ptr<const Checkpoint> resume = nullptr,
                                      std::function<void(Checkpoint)> on_checkpoint = nullptr,
                                      DeviceNoise noise = {});

// Everything RunInProcess takes, and what only the switch frontier uses.
struct RunHooks {
  int threads = 0;  // LibTorch's intra-op threads (0: its default)
  // The GPU worker's LibTorch device: "cpu", or "cuda" / "cuda:N" where a
  // GPU is at hand (the simulated devices run on the host either way).
  std::string device = "cpu";
  std::function<void(const TrainerUpdate&)> observe;
  std::shared_ptr<const Checkpoint> resume;
  std::function<void(Checkpoint)> on_checkpoint;
  DeviceNoise noise;
  int64_t checkpoint_every = 0;  // 0: the switch's only
  SwitchPolicy* switch_policy = nullptr;  // null: the job's phase controller
  bool evaluate_every_epoch = true;
  bool quiet = false;  // no per-epoch lines on stderr
};
absl::StatusOr<BenchRun> RunWithHooks(const JobSpec& spec, TrainingMode::Name mode,
                                      const std::string& label, const RunHooks& hooks);

// One HpT job, its LoRA phase run twice from the same switch: on the GPU
// worker (LibTorch fp32) and on the placement `spec` names (paper: frozen
// weights through the ReRAM model's quantisation and ADC, the rest through
// the systolic array's), resumed from the switch's checkpoint. The full
// phase (the same in both) runs once. `devices` is unset (its job empty)
// when the job did not switch.
struct HptPair {
  BenchRun gpu, devices;
  bool switched = false;
  // It switched at its last step: `devices` is the GPU run (no LoRA step
  // ran, and the last evaluation was the GPU's).
  bool no_lora_steps = false;
};
// `devices` false: the GPU run only.
absl::StatusOr<HptPair> RunHptOnGpuAndDevices(const JobSpec& spec, const std::string& label,
                                               int threads = 0, bool devices = true,
                                               DeviceNoise noise = {});

}  // namespace hpt

#endif  // HPT_BENCHMARKS_BENCH_JOBS_H_
