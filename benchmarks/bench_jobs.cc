#include "benchmarks/bench_jobs.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "coordinator/job_data.h"
#include "coordinator/job_spec.h"
#include "coordinator/local_worker_client.h"
#include "coordinator/trainer.h"
#include "workers/device_executor.h"
#include "workers/gpu_executor.h"

namespace hpt {

std::string ResolveDataDir(const std::string& dir) {
  if (!dir.empty() && dir[0] != '/' && std::getenv("BUILD_WORKING_DIRECTORY") != nullptr) {
    return absl::StrCat(std::getenv("BUILD_WORKING_DIRECTORY"), "/", dir);
  }
  return dir;
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

absl::StatusOr<BenchRun> RunInProcess(const JobSpec& raw, const std::string& mode,
                                      const std::string& label, int threads,
                                      std::function<void(const TrainerUpdate&)> observe) {
  JobSpec spec = raw;
  spec.mutable_hpt()->set_mode(mode);
  ASSIGN_OR_RETURN(spec, NormalizeJobSpec(spec));
  ASSIGN_OR_RETURN(WindowDataset data, BuildJobData(spec.data()));
  GpuExecutor::Options gpu_options;
  gpu_options.device = "cpu";
  gpu_options.intra_op_threads = threads;
  ASSIGN_OR_RETURN(std::unique_ptr<GpuExecutor> gpu, GpuExecutor::Create(gpu_options));
  DeviceExecutor::Options reram_options, systolic_options;
  reram_options.kind = "reram";
  systolic_options.kind = "systolic";
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceExecutor> reram, DeviceExecutor::Create(reram_options));
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceExecutor> systolic,
                   DeviceExecutor::Create(systolic_options));
  LocalWorkerClient gpu_client("gpu0", gpu.get()), reram_client("reram0", reram.get()),
      systolic_client("systolic0", systolic.get());
  BenchRun result;
  Trainer::Options options;
  options.reram_workers = {&reram_client};
  options.systolic_workers = {&systolic_client};
  int last_epoch = 0;
  options.on_progress = [&](const TrainerUpdate& u) {
    if (observe) observe(u);
    Job& j = result.job;
    *j.mutable_progress() = u.progress;
    *j.mutable_test_metrics() = u.test_metrics;
    *j.mutable_hpt() = u.hpt;
    if (u.progress.epoch() != last_epoch && u.epoch_losses.size() == size_t(u.progress.epoch())) {
      last_epoch = u.progress.epoch();
      std::fprintf(stderr, "  [%s] epoch %d/%d  train loss %.4f  test MSE %.4f  phase %s\n",
                   label.c_str(), last_epoch, u.progress.epochs(), u.progress.epoch_loss(),
                   u.progress.test_loss(), u.hpt.phase().c_str());
    }
  };
  const auto start = std::chrono::steady_clock::now();
  Trainer trainer("bench-" + mode, spec, &data, {&gpu_client}, options);
  RETURN_IF_ERROR(trainer.Run());
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace hpt
