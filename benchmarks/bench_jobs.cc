#include "benchmarks/bench_jobs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/training_phase.h"
#include "coordinator/dispatch/local_worker_client.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/training/job_data.h"
#include "coordinator/training/step_history.h"
#include "coordinator/training/trainer.h"
#include "models/model_config.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/sim/device_executor.h"

namespace hpt {

std::string ResolveDataDir(const std::string& dir) {
  if (!dir.empty() && dir[0] != '/' && std::getenv("BUILD_WORKING_DIRECTORY") != nullptr) {
    return absl::StrCat(std::getenv("BUILD_WORKING_DIRECTORY"), "/", dir);
  }
  return dir;
}

int SmallModelHeads(const ModelConfig& preset, int d_model) {
  const int head_width = int(preset.d_model() / std::max(1, preset.num_heads()));
  return std::max(1, d_model / std::max(1, head_width));
}

int SmallModelEpochs(const std::string& preset) {
  if (preset == "weather") return 22;
  if (preset == "swe") return 24;
  if (preset == "covid") return 8;
  if (preset == "wind") return 10;
  return 3;
}

absl::Status SetRealData(const std::string& dataset, const std::string& dir, JobSpec* spec) {
  DataSpec& d = *spec->mutable_data();
  if (dataset == "wind") {
    // The paper's split: test rows 480-2120, train on both sides.
    CsvData& csv = *d.mutable_csv();
    csv.set_path(dir + "/wind/winds.dat");
    csv.set_header(CsvData::ABSENT);
    csv.set_train_begin_row(0);
    csv.set_train_end_row(480);
    RowSpan& more = *csv.add_more_train_rows();
    more.set_begin(2120);
    more.set_end(8387);
    csv.set_test_begin_row(480);
    csv.set_test_end_row(2120);
    d.set_input_steps(12);
  } else if (dataset == "weather") {
    d.mutable_weather()->set_dir(dir + "/weather");
    d.set_input_steps(24);
  } else if (dataset == "covid") {
    d.mutable_covid()->set_path(dir + "/covid/Covid19_01262020_09262020.csv");
    d.set_input_steps(4);
  } else if (dataset == "swe") {
    d.mutable_swe()->set_stations_csv(dir + "/swe/Snotel_Locations_Filtered_v3.csv");
    d.set_input_steps(14);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--dataset must be wind, weather, covid or swe, got '", dataset, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobSpec> SmallModelSpec(const std::string& app, const std::string& dir,
                                       int layers, int d_model, int batch, int epochs) {
  ASSIGN_OR_RETURN(ModelConfig preset, PresetModelConfig(app));
  JobSpec small;
  small.mutable_model()->set_preset(app);
  small.mutable_model()->set_num_layers(layers);
  small.mutable_model()->set_d_model(d_model);
  small.mutable_model()->set_num_heads(SmallModelHeads(preset, d_model));
  small.mutable_training()->set_epochs(epochs > 0 ? epochs : SmallModelEpochs(app));
  small.mutable_training()->set_batch_size(batch);
  small.mutable_hpt()->set_placement(Placement::paper);
  RETURN_IF_ERROR(SetRealData(app, dir, &small));
  return small;
}

absl::StatusOr<BenchRun> RunInProcess(const JobSpec& spec, TrainingMode::Name mode,
                                      const std::string& label, int threads,
                                      std::function<void(const TrainerUpdate&)> observe,
                                      std::shared_ptr<const Checkpoint> resume,
                                      std::function<void(Checkpoint)> on_checkpoint,
                                      DeviceNoise noise) {
  RunHooks hooks;
  hooks.threads = threads;
  hooks.observe = std::move(observe);
  hooks.resume = std::move(resume);
  hooks.on_checkpoint = std::move(on_checkpoint);
  hooks.noise = noise;
  return RunWithHooks(spec, mode, label, hooks);
}

absl::StatusOr<BenchRun> RunWithHooks(const JobSpec& raw, TrainingMode::Name mode,
                                      const std::string& label, const RunHooks& hooks) {
  JobSpec spec = raw;
  spec.mutable_hpt()->set_mode(mode);
  ASSIGN_OR_RETURN(spec, NormalizeJobSpec(spec));
  ASSIGN_OR_RETURN(WindowDataset data, BuildJobData(spec.data()));
  GpuExecutor::Options gpu_options;
  gpu_options.device = hooks.device;
  gpu_options.intra_op_threads = hooks.threads;
  ASSIGN_OR_RETURN(std::unique_ptr<GpuExecutor> gpu, GpuExecutor::Create(gpu_options));
  DeviceExecutor::Options reram_options, systolic_options;
  reram_options.kind = DeviceKind::reram;
  reram_options.reram.read_noise_sigma = hooks.noise.read_sigma;
  reram_options.reram.program_noise_sigma = hooks.noise.program_sigma;
  systolic_options.kind = DeviceKind::systolic;
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceExecutor> reram, DeviceExecutor::Create(reram_options));
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceExecutor> systolic,
                   DeviceExecutor::Create(systolic_options));
  LocalWorkerClient gpu_client("gpu0", gpu.get()), reram_client("reram0", reram.get()),
      systolic_client("systolic0", systolic.get());
  BenchRun result;
  Trainer::Options options;
  options.reram_workers = {&reram_client};
  options.systolic_workers = {&systolic_client};
  options.resume = hooks.resume;
  options.on_checkpoint = hooks.on_checkpoint;
  options.checkpoint_every = hooks.checkpoint_every;
  options.switch_policy = hooks.switch_policy;
  options.evaluate_every_epoch = hooks.evaluate_every_epoch;
  int last_epoch = 0;
  options.on_progress = [&](const TrainerUpdate& u) {
    if (hooks.observe) hooks.observe(u);
    Job& j = result.job;
    *j.mutable_progress() = u.progress;
    *j.mutable_test_metrics() = u.test_metrics;
    *j.mutable_hpt() = u.hpt;
    if (u.progress.epoch() != last_epoch && u.epoch_losses.size() == size_t(u.progress.epoch())) {
      last_epoch = u.progress.epoch();
      if (hooks.quiet) return;
      // The epoch's own point: 0 where the epoch's test split was not scored.
      const std::optional<EpochPoint> point = u.history->LastEpoch();
      const double test_loss = point ? point->test_loss() : 0;
      const std::string test =
          test_loss > 0 ? absl::StrFormat("%.4f", test_loss) : std::string("not scored");
      std::fprintf(stderr, "  [%s] epoch %d/%d  train loss %.4f  test MSE %s  phase %s\n",
                   label.c_str(), last_epoch, u.progress.epochs(), u.progress.epoch_loss(),
                   test.c_str(), PhaseName(u.hpt.phase()).c_str());
    }
  };
  const auto start = std::chrono::steady_clock::now();
  Trainer trainer("bench-" + mode, spec, &data, {&gpu_client}, options);
  RETURN_IF_ERROR(trainer.Run());
  result.job.set_state(SUCCEEDED);
  *result.job.mutable_spec() = spec;
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

absl::StatusOr<HptPair> RunHptOnGpuAndDevices(const JobSpec& spec, const std::string& label,
                                               int threads, bool devices,
                                               DeviceNoise noise) {
  HptPair pair;
  JobSpec on_gpu = spec;
  on_gpu.mutable_hpt()->set_placement(Placement::gpu);
  std::shared_ptr<const Checkpoint> at_switch;
  ASSIGN_OR_RETURN(pair.gpu, RunInProcess(on_gpu, TrainingMode::hpt, label + " hpt, LoRA on gpu",
                                          threads, nullptr, nullptr, [&](Checkpoint c) {
                                            if (c.header.cause() == CheckpointCause::phase_switch) {
                                              at_switch = std::make_shared<Checkpoint>(std::move(c));
                                            }
                                          }));
  pair.switched = pair.gpu.job.hpt().switch_step() >= 0;
  if (!pair.switched || !devices) return pair;
  if (at_switch == nullptr) {
    // The trainer checkpoints a switch at the run's last step only as the
    // run's end: no LoRA step is left to run on the devices.
    if (pair.gpu.job.hpt().switch_step() < pair.gpu.job.progress().step()) {
      return absl::InternalError("the job switched but made no checkpoint at the switch");
    }
    pair.devices = pair.gpu;
    pair.no_lora_steps = true;
    return pair;
  }
  ASSIGN_OR_RETURN(pair.devices, RunInProcess(spec, TrainingMode::hpt,
                                              label + " hpt, LoRA on " +
                                                  Placement::Name_Name(spec.hpt().placement()),
                                              threads, nullptr, at_switch, nullptr, noise));
  return pair;
}

}  // namespace hpt
