// Step time of a preset trained through the coordinator's trainer and one
// real worker process over gRPC, beside the same step taken in one process
// with plain LibTorch, all measured in this run. The service is timed both
// ways it sends steps: task by task (forward, backward, update calls) and
// in runs (TrainRun); for each it prints the fixed cost a step (service
// seconds less in-process seconds) and the ratio. With --launch=graph the
// service's runs capture each step as a CUDA graph, and the in-process
// side is the whole step captured once and replayed (the probe's graph
// baseline, workers/gpu/baseline_probe.h); with --precision=bf16 both sides
// run the forward under bf16 autocast. It times in rounds (--repeats):
// each round the in-process steps (their mean), then both service ways,
// and each figure is the median over rounds of the round's own comparison.
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
#include <numeric>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/median_time.h"
#include "common/enum_names.h"
#include "common/launch_mode.h"
#include "common/process_setup.h"
#include "common/status_macros.h"
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
ABSL_FLAG(int, repeats, 3,
          "Rounds: each times the in-process steps, then the service task by task and in "
          "runs, back to back; the figures are medians over rounds.");
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

// The baseline: the same steps in this process, plain LibTorch, each
// gathering its batch as a training script's loop does (the worker
// gathers each run's batches from its resident copy); each step's seconds,
// step 0 (warm-up) left out.
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
    const auto start = std::chrono::steady_clock::now();
    std::vector<int64_t> idx;
    for (int i = 0; i < batch; ++i) idx.push_back(s * batch + i);
    HostTensor x, y;
    data.Gather(data.train_starts(), idx, &x, &y);
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
// model's snapshot) cancels.
double ServiceStepSeconds(WorkerClient& client, const JobSpec& spec, const WindowDataset& data,
                          int steps, bool runs, absl::Status* status, PhaseDispatch* dispatch) {
  const double short_s = ServiceSeconds(client, spec, data, 2, runs, status, dispatch);
  if (!status->ok()) return 0;
  const double long_s = ServiceSeconds(client, spec, data, steps + 2, runs, status, dispatch);
  return (long_s - short_s) / steps;
}

// One round's seconds a step, each way, timed back to back. This machine's
// speed drifts in bursts (a 2-core VM: the same 42-step run took 94 and
// 135 ms minutes apart), so each way is set against the in-process step of
// its own round, and the figures are medians over rounds, which one slow
// job cannot move.
struct Round {
  double local_s = 0, tasks_s = 0, runs_s = 0;
  double local_median_s = 0;  // printed beside the mean, not compared
};

// The median of what `f` gives each round.
template <typename F>
double OverRounds(const std::vector<Round>& rounds, F f) {
  std::vector<double> v;
  for (const Round& r : rounds) v.push_back(f(r));
  return Median(v);
}

template <typename F>
std::pair<double, double> RangeOverRounds(const std::vector<Round>& rounds, F f) {
  double lo = 1e300, hi = -1e300;
  for (const Round& r : rounds) lo = std::min(lo, f(r)), hi = std::max(hi, f(r));
  return {lo, hi};
}

void PrintFigures(const std::vector<Round>& rounds, const PhaseDispatch& runs_dispatch) {
  for (size_t i = 0; i < rounds.size(); ++i) {
    std::printf(
        "round %zu: in-process %.3f ms (median step %.3f ms), task calls %.3f ms, runs %.3f ms a "
        "step\n",
        i + 1, 1e3 * rounds[i].local_s, 1e3 * rounds[i].local_median_s, 1e3 * rounds[i].tasks_s,
        1e3 * rounds[i].runs_s);
  }
  std::printf("in-process step (%s, %s): median %.4f s over %zu rounds\n",
              absl::GetFlag(FLAGS_launch).c_str(), absl::GetFlag(FLAGS_precision).c_str(),
              OverRounds(rounds, [](const Round& r) { return r.local_s; }), rounds.size());
  std::printf("service runs launched: %s%s%s\n", LaunchName(runs_dispatch.launch()).c_str(),
              runs_dispatch.launch_note().empty() ? "" : "; ", runs_dispatch.launch_note().c_str());
  using Way = double (*)(const Round&);
  for (const auto& [name, way] :
       {std::make_pair("task calls", Way([](const Round& r) { return r.tasks_s; })),
        std::make_pair("runs", Way([](const Round& r) { return r.runs_s; }))}) {
    auto cost = [way](const Round& r) { return 1e3 * (way(r) - r.local_s); };
    auto ratio = [way](const Round& r) { return way(r) / r.local_s; };
    const auto [cost_lo, cost_hi] = RangeOverRounds(rounds, cost);
    const auto [ratio_lo, ratio_hi] = RangeOverRounds(rounds, ratio);
    std::printf(
        "service, %-10s        %.4f s a step: fixed cost %.2f ms a step "
        "(rounds %.2f to %.2f), ratio (service / in-process) %.3f (rounds %.3f to %.3f)\n",
        name, OverRounds(rounds, way), OverRounds(rounds, cost), cost_lo, cost_hi,
        OverRounds(rounds, ratio), ratio_lo, ratio_hi);
  }
}

struct Setup {
  JobSpec spec;
  SyntheticOptions series;
  Launch::Mode launch{};
  bool bf16 = false;
};

// The job and its data from the flags; an error names the flag.
absl::StatusOr<Setup> SetupFromFlags(int steps, int batch) {
  Setup s;
  Precision::Name precision{};
  RETURN_IF_ERROR(ParseEnumName("--launch", absl::GetFlag(FLAGS_launch), &s.launch));
  RETURN_IF_ERROR(ParseEnumName("--precision", absl::GetFlag(FLAGS_precision), &precision));
  s.bf16 = precision == Precision::bf16;
  JobSpec spec;
  spec.mutable_training()->set_launch(s.launch);
  spec.mutable_training()->set_precision(precision);
  spec.mutable_model()->set_preset(absl::GetFlag(FLAGS_preset));
  spec.mutable_training()->set_epochs(1);
  spec.mutable_training()->set_batch_size(batch);
  spec.mutable_data()->set_input_steps(absl::GetFlag(FLAGS_input_steps));
  spec.mutable_hpt()->set_mode(TrainingMode::full);  // plain steps: no phase control
  ASSIGN_OR_RETURN(s.spec, NormalizeJobSpec(spec));
  s.series.stations = absl::GetFlag(FLAGS_stations);
  s.series.time_steps = batch * (steps + 4) + 64;
  return s;
}

// The worker process, listening on loopback.
absl::StatusOr<testing::ChildProcess> StartWorker(int* grpc_port) {
  std::vector<std::string> argv = {absl::GetFlag(FLAGS_worker_binary),
                                   "--listen=127.0.0.1:0", "--metrics=",
                                   "--device=" + absl::GetFlag(FLAGS_device),
                                   "--port_file=/tmp/hpt_bench_worker.port"};
  if (absl::GetFlag(FLAGS_threads) > 0) {
    argv.push_back(absl::StrCat("--threads=", absl::GetFlag(FLAGS_threads)));
  }
  std::remove("/tmp/hpt_bench_worker.port");
  ASSIGN_OR_RETURN(testing::ChildProcess worker,
                   testing::ChildProcess::Start(argv, "/tmp/hpt_bench_worker.log"));
  auto ports = testing::WaitForPortFile("/tmp/hpt_bench_worker.port", worker, absl::Seconds(60));
  if (!ports.ok()) {
    return absl::UnavailableError(absl::StrCat("worker did not start: ", ports.status().message()));
  }
  *grpc_port = ports->grpc;
  return worker;
}

int Fail(const absl::Status& status, int code) {
  std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
  return code;
}

int Main() {
  const int steps = absl::GetFlag(FLAGS_steps);
  const int batch = absl::GetFlag(FLAGS_batch);
  const int rounds = absl::GetFlag(FLAGS_repeats);
  if (steps < 1 || batch < 1 || rounds < 1) {
    return Fail(absl::InvalidArgumentError("--steps, --batch and --repeats must be at least 1"), 2);
  }
  if (absl::GetFlag(FLAGS_threads) > 0) torch::set_num_threads(absl::GetFlag(FLAGS_threads));
  absl::StatusOr<Setup> setup = SetupFromFlags(steps, batch);
  if (!setup.ok()) return Fail(setup.status(), 2);
  const JobSpec& spec = setup->spec;
  WindowOptions wo;
  wo.input_steps = absl::GetFlag(FLAGS_input_steps);
  wo.train = {0, setup->series.time_steps};
  WindowDataset data = *WindowDataset::Create(MakeSyntheticSeries(setup->series), wo);
  ModelConfig config =
      *ResolveModelConfig(spec.model(), data.input_features(), data.output_features());
  const int64_t tokens = setup->series.stations;
  std::printf("preset %s: %d layers, d_model %d, %d heads; batch %d x %d tokens; %d steps\n",
              config.preset().c_str(), config.num_layers(), config.d_model(), config.num_heads(),
              batch, int(tokens), steps);

  const torch::Device device(absl::GetFlag(FLAGS_device));
  auto run_local = [&]() {
    return setup->launch == Launch::graph
               ? InProcessGraph(config, spec, steps, batch, tokens, setup->bf16)
               : RunLocal(config, spec, data, steps, batch, device, setup->bf16);
  };
  int grpc_port = 0;
  absl::StatusOr<testing::ChildProcess> worker = StartWorker(&grpc_port);
  if (!worker.ok()) return Fail(worker.status(), 1);
  GrpcWorkerClient client(absl::StrCat("127.0.0.1:", grpc_port), {});
  std::vector<Round> timed;
  PhaseDispatch tasks_dispatch, runs_dispatch;
  absl::Status status;
  for (int r = 0; r < rounds && status.ok(); ++r) {
    Round round;
    const std::vector<double> local = run_local();
    if (local.empty()) {
      status = absl::FailedPreconditionError(
          absl::StrCat("the in-process graph step did not run on ", absl::GetFlag(FLAGS_device)));
      break;
    }
    // The mean, as the service's figure is (the difference of two jobs'
    // wall times over the steps between them): a median of steps would
    // leave out the in-process side's slow steps and keep the service's.
    round.local_s = std::accumulate(local.begin(), local.end(), 0.0) / double(local.size());
    round.local_median_s = Median(local);
    // An untimed job first: the worker idled while this process trained,
    // and on the 2-core VM whichever way went first after that ran up to
    // 1.7x slower than the same job later in the round.
    ServiceSeconds(client, spec, data, steps + 2, true, &status, &runs_dispatch);
    // The two ways take turns going first, so a drift within a round
    // favours neither.
    for (bool runs : {r % 2 == 1, r % 2 == 0}) {
      if (!status.ok()) break;
      (runs ? round.runs_s : round.tasks_s) = ServiceStepSeconds(
          client, spec, data, steps, runs, &status, runs ? &runs_dispatch : &tasks_dispatch);
    }
    if (status.ok()) timed.push_back(round);
  }
  worker->Stop();
  if (!status.ok()) return Fail(status, 1);
  PrintFigures(timed, runs_dispatch);
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
