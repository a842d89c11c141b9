// Step time of a preset trained through the coordinator's trainer and one
// real worker process over gRPC, beside the same step taken in one process
// with plain LibTorch, all measured in this run. The service is timed both
// ways it sends steps: task by task (forward, backward, update calls) and
// in runs (TrainRun); for each it prints the fixed cost a step (service
// seconds less in-process seconds) and the ratio.
//
//   bazel run -c opt //benchmarks:step_overhead_bench -- --preset=tiny --batch=1 \
//       --stations=16 --steps=40       # the fixed cost: compute too small to hide it
//   bazel run -c opt //benchmarks:step_overhead_bench -- --preset=wind --batch=32 [--device=cuda:0]
//
// Data: synthetic series shaped like the wind set (57 stations, 12-step
// window); step time does not depend on the values.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/median_time.h"
#include "common/process_setup.h"
#include "common/test_util.h"
#include "coordinator/dispatch/grpc_worker_client.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/training/trainer.h"
#include "data/synthetic.h"
#include "data/window_dataset.h"
#include "models/st_transformer.h"

ABSL_FLAG(std::string, preset, "wind", "Model preset.");
ABSL_FLAG(int, batch, 32, "Batch size.");
ABSL_FLAG(int, stations, 57, "Tokens per sample (wind: 57 stations).");
ABSL_FLAG(int, input_steps, 12, "Input steps per sample (wind: 12).");
ABSL_FLAG(int, steps, 5,
          "Timed steps per side: in-process after one warm-up step; through the service, the "
          "difference between jobs of steps + 2 and 2 steps.");
ABSL_FLAG(int, repeats, 3, "Service measurements per launch; the least is kept.");
ABSL_FLAG(int, threads, 0, "LibTorch threads on both sides (0: default).");
ABSL_FLAG(std::string, device, "cpu",
          "Where both sides run: cpu or cuda:N (the worker gets --device too).");
ABSL_FLAG(std::string, worker_binary, "workers/hpt_worker",
          "Path of hpt_worker (default: from this target's runfiles).");

namespace hpt {
namespace {

// The baseline: the same steps in this process, plain LibTorch; each
// step's seconds, step 0 (warm-up) left out.
std::vector<double> RunLocal(const ModelConfig& config, const JobSpec& spec,
                             const WindowDataset& data, int steps, int batch,
                             const torch::Device& device) {
  std::vector<double> local;
  torch::manual_seed(spec.training().seed());
  SpatioTemporalTransformer model(config);
  model->to(device);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  model->train();
  for (int s = 0; s <= steps; ++s) {
    std::vector<int64_t> idx;
    for (int i = 0; i < batch; ++i) idx.push_back(s * batch + i);
    HostTensor x, y;
    data.Gather(data.train_starts(), idx, &x, &y);
    const auto start = std::chrono::steady_clock::now();
    // A copy, as the worker makes of each batch it is sent.
    torch::Tensor tx =
        torch::from_blob(x.data.data(), x.shape).to(device, /*non_blocking=*/false, /*copy=*/true);
    torch::Tensor ty =
        torch::from_blob(y.data.data(), y.shape).to(device, /*non_blocking=*/false, /*copy=*/true);
    torch::Tensor loss = torch::mse_loss(model->forward(tx), ty);
    loss.backward();
    adam.step();
    adam.zero_grad();
    // The step's kernels finish before it is timed (the worker's do too).
    if (device.is_cuda()) loss.item<float>();
    const double t = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start).count();
    if (s > 0) local.push_back(t);  // step 0 warms up
  }
  return local;
}

// The trainer's wall seconds for `steps` steps through `client` (a real
// worker process): loading, the steps, the trained model's snapshot.
double ServiceSeconds(WorkerClient& client, JobSpec spec, const WindowDataset& data, int steps,
                      bool runs, absl::Status* status) {
  spec.mutable_training()->set_max_steps_per_epoch(steps);
  Trainer::Options options;
  options.runs = runs;
  Trainer trainer("bench", spec, &data, {&client}, options);
  const auto start = std::chrono::steady_clock::now();
  *status = trainer.Run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The service's seconds a step: the least over `repeats` of the
// difference between a job of `steps` + 2 steps and one of 2, over
// `steps`, so what a job costs once (loading, the first run, the model's
// snapshot) cancels.
double ServiceStepSeconds(WorkerClient& client, const JobSpec& spec, const WindowDataset& data,
                          int steps, int repeats, bool runs, absl::Status* status) {
  double best = 1e30;
  for (int r = 0; r < repeats && status->ok(); ++r) {
    const double short_s = ServiceSeconds(client, spec, data, 2, runs, status);
    if (!status->ok()) break;
    const double long_s = ServiceSeconds(client, spec, data, steps + 2, runs, status);
    best = std::min(best, (long_s - short_s) / steps);
  }
  return best;
}

// Long because it is a script: start the worker, time both sides in turn,
// print the fixed cost and the ratio for each launch.
int Main() {
  const int steps = absl::GetFlag(FLAGS_steps);
  const int batch = absl::GetFlag(FLAGS_batch);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  if (steps < 1 || batch < 1 || repeats < 1) {
    std::fprintf(stderr, "--steps, --batch and --repeats must be at least 1\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_threads) > 0) torch::set_num_threads(absl::GetFlag(FLAGS_threads));

  JobSpec spec;
  spec.mutable_model()->set_preset(absl::GetFlag(FLAGS_preset));
  spec.mutable_training()->set_epochs(1);
  spec.mutable_training()->set_batch_size(batch);
  spec.mutable_data()->set_input_steps(absl::GetFlag(FLAGS_input_steps));
  spec.mutable_hpt()->set_mode("full");  // plain steps: no phase control
  auto normalized = NormalizeJobSpec(spec);
  if (!normalized.ok()) {
    std::fprintf(stderr, "%s\n", std::string(normalized.status().message()).c_str());
    return 2;
  }
  spec = *normalized;
  SyntheticOptions so;
  so.stations = absl::GetFlag(FLAGS_stations);
  so.time_steps = batch * (steps + 4) + 64;
  WindowOptions wo;
  wo.input_steps = absl::GetFlag(FLAGS_input_steps);
  wo.train = {0, so.time_steps};
  WindowDataset data = *WindowDataset::Create(MakeSyntheticSeries(so), wo);
  ModelConfig config = *ResolveModelConfig(spec.model(), data.input_features(),
                                           data.output_features());
  std::printf("preset %s: %d layers, d_model %d, %d heads; batch %d x %d tokens; %d steps\n",
              config.preset().c_str(), config.num_layers(), config.d_model(),
              config.num_heads(), batch, static_cast<int>(so.stations), steps);

  // Timed before and after the service; the faster median is the
  // baseline, so warm-up effects cannot flatter the ratio.
  const torch::Device device(absl::GetFlag(FLAGS_device));
  auto run_local = [&]() { return RunLocal(config, spec, data, steps, batch, device); };
  const std::vector<double> local_before = run_local();

  std::vector<std::string> argv = {absl::GetFlag(FLAGS_worker_binary),
                                   "--listen=127.0.0.1:0", "--metrics=",
                                   "--device=" + absl::GetFlag(FLAGS_device),
                                   "--port_file=/tmp/hpt_bench_worker.port"};
  if (absl::GetFlag(FLAGS_threads) > 0) {
    argv.push_back(absl::StrCat("--threads=", absl::GetFlag(FLAGS_threads)));
  }
  std::remove("/tmp/hpt_bench_worker.port");
  auto worker = testing::ChildProcess::Start(argv, "/tmp/hpt_bench_worker.log");
  if (!worker.ok()) {
    std::fprintf(stderr, "%s\n", std::string(worker.status().message()).c_str());
    return 1;
  }
  auto ports = testing::WaitForPortFile("/tmp/hpt_bench_worker.port", *worker,
                                        absl::Seconds(60));
  if (!ports.ok()) {
    std::fprintf(stderr, "worker did not start: %s\n",
                 std::string(ports.status().message()).c_str());
    return 1;
  }
  GrpcWorkerClient client(absl::StrCat("127.0.0.1:", ports->grpc), {});
  absl::Status status;
  const double tasks_s = ServiceStepSeconds(client, spec, data, steps, repeats, false, &status);
  const double runs_s = status.ok()
                            ? ServiceStepSeconds(client, spec, data, steps, repeats, true, &status)
                            : 0;
  worker->Stop();
  if (!status.ok()) {
    std::fprintf(stderr, "service run failed: %s\n", std::string(status.message()).c_str());
    return 1;
  }

  const std::vector<double> local_after = run_local();
  const double local_s = std::min(Median(local_before), Median(local_after));
  std::printf("in-process step           median %.4f s before, %.4f s after (%zu steps each)\n",
              Median(local_before), Median(local_after), local_before.size());
  for (const auto& [name, service_s] :
       {std::make_pair("task calls", tasks_s), std::make_pair("runs", runs_s)}) {
    std::printf("service, %-10s        %.4f s a step: fixed cost %.2f ms a step, "
                "ratio (service / in-process) %.3f\n",
                name, service_s, 1e3 * (service_s - local_s), service_s / local_s);
  }
  return 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  // The in-process side runs as the worker process runs (workers/
  // worker_main.cc): with glibc's default, each wind step here trimmed and
  // re-faulted its heap, and the service came out faster than one process.
  hpt::KeepLargeBuffersOnTheHeap();
  absl::ParseCommandLine(argc, argv);
  return hpt::Main();
}
