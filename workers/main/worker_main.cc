// hpt_worker: one device node of the HpT service.
//
//   hpt_worker --kind=gpu --listen=127.0.0.1:50061
//       --coordinator=127.0.0.1:50051 --metrics=127.0.0.1:9461
//   hpt_worker --kind=reram --reram_adc_bits=6 ...
//   hpt_worker --kind=systolic --flagfile=systolic.flags
//
// Device parameters come from the flags below or, with --flagfile=FILE, from
// a file of the same flags, one per line (absl's flag files).
#include <cmath>
#include <iostream>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/device_kind.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/process_setup.h"
#include "common/server_main.h"
#include "common/status_macros.h"
#include "common/tls_flags.h"
#include "devices/device_flags.h"
#include "devices/gpu/roofline.h"
#include "workers/main/worker_backend.h"

ABSL_FLAG(std::string, kind, "gpu", "Device kind: gpu, reram or systolic.");
ABSL_FLAG(std::string, listen, "127.0.0.1:0",
          "host:port for WorkerService; port 0 picks a free port.");
ABSL_FLAG(std::string, advertise, "",
          "host:port the coordinator should dial; default: listen host and "
          "bound port.");
ABSL_FLAG(std::string, collective_host, "",
          "gpu: the address this worker's Gloo collectives listen on and its data-parallel "
          "peers dial: this host's address on the cluster's own network. Default: the host "
          "of --advertise, else 127.0.0.1 (every worker on one machine).");
ABSL_FLAG(std::string, coordinator, "",
          "Coordinator host:port to register with (empty: do not register).");
ABSL_FLAG(std::string, name, "", "Worker name shown by the coordinator.");
ABSL_FLAG(double, register_timeout_s, 300,
          "Seconds the worker goes on without registering with --coordinator (at start, or "
          "after losing it) before it exits with status 1; 0: never.");
ABSL_FLAG(std::string, metrics, "127.0.0.1:0",
          "host:port for Prometheus /metrics; empty disables.");
ABSL_FLAG(std::string, device, "auto", "LibTorch device: auto, cpu or cuda:N.");
ABSL_FLAG(int, threads, 0, "LibTorch intra-op threads (0: LibTorch default).");
ABSL_FLAG(std::string, device_id, "",
          "gpu: the physical device's identity the worker registers with; empty: a CUDA "
          "GPU's UUID (a CPU has none). Workers with the same id share one GPU: the "
          "coordinator gives their data-parallel group Gloo, not NCCL. Set it on the CPU to "
          "rehearse a one-GPU layout.");
ABSL_FLAG(std::string, reference_gpu, "v100",
          "gpu: reference GPU profile the cost model reports beside measured time: "
          "a preset (v100, a100, h100, ...: a name it does not know lists them), or a "
          "profile file written by hpt_calibrate.");
// The device flags (--systolic_*, --reram_*): devices/device_flags.h.
ABSL_FLAG(std::string, port_file, "",
          "Write 'grpc=PORT metrics=PORT' here once serving (for launchers "
          "and tests that use port 0).");

namespace {

// The server's and its backend's options, from the flags.
struct WorkerFlags {
  hpt::WorkerServer::Options server;
  hpt::WorkerBackendOptions backend;
};

// The options from the flags; INVALID_ARGUMENT naming a bad flag.
absl::StatusOr<WorkerFlags> OptionsFromFlags() {
  hpt::WorkerServer::Options options;
  hpt::WorkerBackendOptions backend;
  // Only the coordinator and other workers (certificates of the cluster's
  // CA) may call a worker.
  ASSIGN_OR_RETURN(options.tls, hpt::TlsFromFlags(/*require_client_certs=*/true));
  // The addresses the worker dials or hands out are checked here, naming
  // the flag: a malformed one would otherwise leave the worker running on,
  // unregistered. (WorkerServer::Start checks --listen.)
  for (const auto& [flag, value] : {std::pair<const char*, std::string>{
                                        "--coordinator", absl::GetFlag(FLAGS_coordinator)},
                                    {"--advertise", absl::GetFlag(FLAGS_advertise)}}) {
    if (!value.empty()) RETURN_IF_ERROR(hpt::ParseHostPort(value, flag).status());
  }
  ASSIGN_OR_RETURN(backend.device.systolic, hpt::SystolicConfigFromFlags());
  ASSIGN_OR_RETURN(backend.device.reram, hpt::ReramConfigFromFlags());
  ASSIGN_OR_RETURN(options.kind, hpt::ParseDeviceKind("--kind", absl::GetFlag(FLAGS_kind)));
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.advertise_address = absl::GetFlag(FLAGS_advertise);
  options.coordinator_address = absl::GetFlag(FLAGS_coordinator);
  const double register_timeout_s = absl::GetFlag(FLAGS_register_timeout_s);
  if (!(register_timeout_s >= 0) || !std::isfinite(register_timeout_s)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--register_timeout_s must be a number >= 0, got ", register_timeout_s));
  }
  options.register_timeout = register_timeout_s > 0 ? absl::Seconds(register_timeout_s)
                                                    : absl::InfiniteDuration();
  options.name = absl::GetFlag(FLAGS_name);
  backend.gpu.device = absl::GetFlag(FLAGS_device);
  backend.gpu.intra_op_threads = absl::GetFlag(FLAGS_threads);
  if (backend.gpu.intra_op_threads < 0 || backend.gpu.intra_op_threads > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--threads must be 0 (LibTorch's default) to 4096, got ", backend.gpu.intra_op_threads));
  }
  absl::StatusOr<std::string> reference =
      hpt::ReferenceGpuValue(absl::GetFlag(FLAGS_reference_gpu));
  if (!reference.ok()) return reference.status();
  backend.gpu.reference_gpu = *reference;
  backend.gpu.device_id = absl::GetFlag(FLAGS_device_id);
  backend.gpu.gloo_host = absl::GetFlag(FLAGS_collective_host);
  if (backend.gpu.gloo_host.empty() && !options.advertise_address.empty()) {
    ASSIGN_OR_RETURN(hpt::HostPort advertised,
                     hpt::ParseHostPort(options.advertise_address, "--advertise"));
    backend.gpu.gloo_host = advertised.host;
  }
  if (backend.gpu.gloo_host.empty()) backend.gpu.gloo_host = "127.0.0.1";
  return WorkerFlags{std::move(options), std::move(backend)};
}

}  // namespace

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  absl::SetProgramUsageMessage("HpT worker: runs training tasks for one device.");
  absl::ParseCommandLine(argc, argv);
  hpt::KeepLargeBuffersOnTheHeap();
  absl::StatusOr<WorkerFlags> options = OptionsFromFlags();
  if (!options.ok()) return hpt::StartFailure("hpt_worker", options.status());
  std::unique_ptr<hpt::MetricsServer> metrics;
  if (!absl::GetFlag(FLAGS_metrics).empty()) {
    auto started = hpt::MetricsServer::Start(absl::GetFlag(FLAGS_metrics),
                                             "worker-" + absl::GetFlag(FLAGS_kind));
    if (!started.ok()) return hpt::StartFailure("hpt_worker", started.status());
    metrics = std::move(*started);
    options->server.metrics_registry = &metrics->registry();
  }
  auto server = hpt::StartWorker(std::move(options->server), std::move(options->backend));
  if (!server.ok()) return hpt::StartFailure("hpt_worker", server.status());
  hpt::WorkerServer* running = server->get();
  hpt::ShutdownOnSignals([running] { running->Shutdown(); });
  const int metrics_port = metrics ? metrics->port() : 0;
  std::cout << "hpt_worker kind=" << absl::GetFlag(FLAGS_kind) << " grpc=" << running->address()
            << " metrics_port=" << metrics_port << " device=" << running->device() << std::endl;
  if (absl::Status written =
          hpt::WritePortFile(absl::GetFlag(FLAGS_port_file), running->port(), metrics_port);
      !written.ok()) {
    std::cerr << "hpt_worker: " << written.message() << std::endl;
  }
  if (absl::Status ended = running->Wait(); !ended.ok()) {
    std::cerr << "hpt_worker: " << ended.message() << std::endl;
    return 1;
  }
  return 0;
}
