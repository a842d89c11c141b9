// Step time of a preset trained through the coordinator's trainer and one
// real worker process over gRPC, beside the same step taken in one process
// with plain LibTorch, all measured in this run. The service is timed both
// ways it sends steps: task by task (forward, backward, update calls) and
// in runs (TrainRun); for each it prints the fixed cost a step (service
// seconds less in-process seconds) and the ratio. With --launch=graph the
// service's runs capture each step as a CUDA graph, and the in-process
// side is the whole step captured once and replayed (the probe's graph
// baseline, workers/gpu/baseline_probe.h); with --precision=bf16 both sides
// run the forward under bf16 autocast.
//
//   bazel run -c opt //benchmarks:step_overhead_bench -- --preset=tiny --batch=1
//       --stations=16 --steps=40       (one line: the fixed cost, compute too small to hide it)
//   bazel run -c opt //benchmarks:step_overhead_bench -- --preset=wind --batch=32 [--device=cuda:0]
//   ... --device=cuda:0 --launch=graph [--precision=bf16]
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
#include "common/enum_names.h"
#include "common/process_setup.h"
#include "common/test_util.h"
#include "coordinator/dispatch/grpc_worker_client.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/training/trainer.h"
#include "data/synthetic.h"
#include "data/window_dataset.h"
#include "models/st_transformer.h"
#include "workers/gpu/baseline_probe.h"
#include "workers/gpu/bf16_autocast.h"
#include "workers/gpu/device_meter.h"

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
ABSL_FLAG(std::string, launch, "eager",
          "eager or graph: the job's training.launch, and the in-process step's (graph: the "
          "whole step captured once and replayed; CUDA only).");
ABSL_FLAG(std::string, precision, "fp32", "fp32 or bf16 (autocast), on both sides.");
ABSL_FLAG(std::string, worker_binary, "workers/main/hpt_worker",
          "Path of hpt_worker (default: from this target's runfiles).");

namespace hpt {
namespace {

// The baseline: the same steps in this process, plain LibTorch; each
// step's seconds, step 0 (warm-up) left out.
std::vector<double> RunLocal(const ModelConfig& config, const JobSpec& spec,
                             const WindowDataset& data, int steps, int batch,
                             const torch::Device& device, bool bf16) {
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
    torch::Tensor loss;
    {
      Bf16Autocast autocast(device, bf16);
      loss = torch::mse_loss(model->forward(tx), ty);
    }
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

// The in-process step as one CUDA graph (fused Adam; bf16 autocast with
// `bf16`), replayed: the probe's graph baseline, `steps` timed replays.
// Empty where it cannot run (no CUDA), which the caller reports.
std::vector<double> InProcessGraph(const ModelConfig& config, const JobSpec& spec, int steps,
                                   int batch, int64_t tokens, bool bf16) {
  ProbeBaselinesRequest r;
  *r.mutable_model() = config;
  r.set_batch(batch);
  r.set_tokens(tokens);
  r.set_steps(steps);
  r.set_seed(spec.training().seed());
  r.add_baselines(bf16 ? GpuBaseline::bf16 : GpuBaseline::graph);
  const std::string device = absl::GetFlag(FLAGS_device);
  std::unique_ptr<DeviceMeter> meter = DeviceMeter::Create(device);
  absl::StatusOr<ProbeBaselinesResponse> probed = ProbeBaselines(r, device, meter.get());
  if (!probed.ok() || probed->baselines(0).step_s() <= 0) {
    std::fprintf(stderr, "in-process graph: %s\n",
                 probed.ok() ? probed->baselines(0).not_run().c_str()
                             : std::string(probed.status().message()).c_str());
    return {};
  }
  return {probed->baselines(0).step_s()};
}

// The trainer's wall seconds for `steps` steps through `client` (a real
// worker process): loading, the steps, the trained model's snapshot.
double ServiceSeconds(WorkerClient& client, JobSpec spec, const WindowDataset& data, int steps,
                      bool runs, absl::Status* status, PhaseDispatch* dispatch) {
  spec.mutable_training()->set_max_steps_per_epoch(steps);
  Trainer::Options options;
  options.runs = runs;
  options.on_progress = [dispatch](const TrainerUpdate& u) {
    if (u.hpt.dispatch_size() > 0) *dispatch = u.hpt.dispatch(0);
  };
  Trainer trainer("bench", spec, &data, {&client}, options);
  const auto start = std::chrono::steady_clock::now();
  *status = trainer.Run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The service's seconds a step: a job of `steps` + 2 steps less one of 2,
// over `steps`, so what a job costs once (loading, the first run, the
// model's snapshot) cancels. Each job's time is its least over `repeats`,
// taken apart: other work only adds time, so each least is that job's
// best estimate. The least of the differences would take a slow short
// job for a fast step (on an H200, 2026-11-29, it gave 0.5 ms for a step
// whose graph alone takes 4.4).
double ServiceStepSeconds(WorkerClient& client, const JobSpec& spec, const WindowDataset& data,
                          int steps, int repeats, bool runs, absl::Status* status,
                          PhaseDispatch* dispatch) {
  double short_s = 1e30, long_s = 1e30;
  for (int r = 0; r < repeats && status->ok(); ++r) {
    short_s = std::min(short_s, ServiceSeconds(client, spec, data, 2, runs, status, dispatch));
    if (!status->ok()) break;
    long_s =
        std::min(long_s, ServiceSeconds(client, spec, data, steps + 2, runs, status, dispatch));
  }
  return (long_s - short_s) / steps;
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
  Launch::Mode launch{};  // set by the parse below
  Precision::Name precision{};
  absl::Status parsed = ParseEnumName("--launch", absl::GetFlag(FLAGS_launch), &launch);
  if (parsed.ok()) {
    parsed = ParseEnumName("--precision", absl::GetFlag(FLAGS_precision), &precision);
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", std::string(parsed.message()).c_str());
    return 2;
  }
  const bool bf16 = precision == Precision::bf16;

  JobSpec spec;
  spec.mutable_training()->set_launch(launch);
  spec.mutable_training()->set_precision(precision);
  spec.mutable_model()->set_preset(absl::GetFlag(FLAGS_preset));
  spec.mutable_training()->set_epochs(1);
  spec.mutable_training()->set_batch_size(batch);
  spec.mutable_data()->set_input_steps(absl::GetFlag(FLAGS_input_steps));
  spec.mutable_hpt()->set_mode(TrainingMode::full);  // plain steps: no phase control
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
  auto run_local = [&]() {
    return launch == Launch::graph ? InProcessGraph(config, spec, steps, batch, so.stations, bf16)
                                   : RunLocal(config, spec, data, steps, batch, device, bf16);
  };
  const std::vector<double> local_before = run_local();
  if (local_before.empty()) {
    std::fprintf(stderr, "the in-process graph step did not run on %s\n",
                 absl::GetFlag(FLAGS_device).c_str());
    return 1;
  }

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
  PhaseDispatch tasks_dispatch, runs_dispatch;
  const double tasks_s =
      ServiceStepSeconds(client, spec, data, steps, repeats, false, &status, &tasks_dispatch);
  const double runs_s =
      status.ok()
          ? ServiceStepSeconds(client, spec, data, steps, repeats, true, &status, &runs_dispatch)
          : 0;
  worker->Stop();
  if (!status.ok()) {
    std::fprintf(stderr, "service run failed: %s\n", std::string(status.message()).c_str());
    return 1;
  }

  const std::vector<double> local_after = run_local();
  const double local_s = std::min(Median(local_before), Median(local_after));
  std::printf("in-process step (%s, %s) median %.4f s before, %.4f s after (%zu steps)\n",
              absl::GetFlag(FLAGS_launch).c_str(), absl::GetFlag(FLAGS_precision).c_str(),
              Median(local_before), Median(local_after), size_t(steps));
  std::printf("service runs launched: %s%s%s\n",
              runs_dispatch.launch() == Launch::graph ? "graph" : "eager",
              runs_dispatch.launch_note().empty() ? "" : "; ",
              runs_dispatch.launch_note().c_str());
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
