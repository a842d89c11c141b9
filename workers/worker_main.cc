// hpt_worker: one device node of the HpT service.
//
//   hpt_worker --kind=gpu --listen=127.0.0.1:50061
//       --coordinator=127.0.0.1:50051 --metrics=127.0.0.1:9461
#include <csignal>
#include <iostream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/metrics.h"
#include "common/net.h"
#include "workers/worker_server.h"

ABSL_FLAG(std::string, kind, "gpu", "Device kind: gpu (reram, systolic: planned).");
ABSL_FLAG(std::string, listen, "127.0.0.1:0",
          "host:port for WorkerService; port 0 picks a free port.");
ABSL_FLAG(std::string, advertise, "",
          "host:port the coordinator should dial; default: listen host and "
          "bound port.");
ABSL_FLAG(std::string, coordinator, "",
          "Coordinator host:port to register with (empty: do not register).");
ABSL_FLAG(std::string, name, "", "Worker name shown by the coordinator.");
ABSL_FLAG(std::string, metrics, "127.0.0.1:0",
          "host:port for Prometheus /metrics; empty disables.");
ABSL_FLAG(std::string, device, "auto", "LibTorch device: auto, cpu or cuda:N.");
ABSL_FLAG(int, threads, 0, "LibTorch intra-op threads (0: LibTorch default).");
ABSL_FLAG(std::string, port_file, "",
          "Write 'grpc=PORT metrics=PORT' here once serving (for launchers "
          "and tests that use port 0).");

namespace {
hpt::WorkerServer* g_server = nullptr;
void HandleSignal(int) {
  // Shutdown() joins threads; do it off the signal handler.
  std::thread([] {
    if (g_server != nullptr) g_server->Shutdown();
  }).detach();
}
}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("HpT worker: runs training tasks for one device.");
  absl::ParseCommandLine(argc, argv);

  std::unique_ptr<hpt::MetricsServer> metrics;
  if (!absl::GetFlag(FLAGS_metrics).empty()) {
    auto started = hpt::MetricsServer::Start(absl::GetFlag(FLAGS_metrics),
                                             "worker-" + absl::GetFlag(FLAGS_kind));
    if (!started.ok()) {
      std::cerr << "hpt_worker: " << started.status().message() << std::endl;
      return 1;
    }
    metrics = std::move(*started);
  }

  hpt::WorkerServer::Options options;
  options.kind = absl::GetFlag(FLAGS_kind);
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.advertise_address = absl::GetFlag(FLAGS_advertise);
  options.coordinator_address = absl::GetFlag(FLAGS_coordinator);
  options.name = absl::GetFlag(FLAGS_name);
  options.executor.device = absl::GetFlag(FLAGS_device);
  options.executor.intra_op_threads = absl::GetFlag(FLAGS_threads);
  if (metrics) options.metrics_registry = &metrics->registry();
  auto server = hpt::WorkerServer::Start(options);
  if (!server.ok()) {
    std::cerr << "hpt_worker: " << server.status().message() << std::endl;
    return server.status().code() == absl::StatusCode::kUnimplemented ? 2 : 1;
  }
  g_server = server->get();
  std::signal(SIGINT, HandleSignal);
  std::signal(SIGTERM, HandleSignal);
  const int metrics_port = metrics ? metrics->port() : 0;
  std::cout << "hpt_worker kind=" << options.kind << " grpc="
            << (*server)->address() << " metrics_port=" << metrics_port
            << std::endl;
  if (!absl::GetFlag(FLAGS_port_file).empty()) {
    absl::Status written = hpt::WriteFileAtomically(
        absl::GetFlag(FLAGS_port_file),
        "grpc=" + std::to_string((*server)->port()) +
            " metrics=" + std::to_string(metrics_port) + "\n");
    if (!written.ok()) std::cerr << "hpt_worker: " << written.message() << std::endl;
  }
  (*server)->Wait();
  g_server = nullptr;
  return 0;
}
