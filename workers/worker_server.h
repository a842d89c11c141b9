// WorkerServer: a running worker process's server. Owns the executor it is
// given (workers/main builds one per kind: LibTorch for gpu, a simulated
// device for reram and systolic), serves WorkerService (plus health and
// reflection), and
// registers with the coordinator on a heartbeat. While it cannot register,
// it says why on every try, backing off from the heartbeat interval to 30 s
// between tries; after `register_timeout` without registering (at start or
// after losing the coordinator) it stops, and Wait returns why.
//
//   WorkerServer::Options o;
//   o.listen_address = "127.0.0.1:0";
//   ASSIGN_OR_RETURN(auto server, WorkerServer::Start(o, std::move(executor)));
//   std::cout << server->port();
#ifndef HPT_WORKERS_WORKER_SERVER_H_
#define HPT_WORKERS_WORKER_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc_setup.h"
#include "prometheus/registry.h"
#include "workers/task_executor.h"

namespace hpt {

class WorkerServer {
 public:
  struct Options {
    DeviceKind::Name kind = DeviceKind::gpu;
    std::string listen_address = "127.0.0.1:0";
    // Address the coordinator dials back; empty: listen host + bound port.
    std::string advertise_address;
    std::string name;  // shown by the coordinator; default kind@address
    // Coordinator to register with; empty: run unregistered (the
    // coordinator may list this worker in its --workers flag instead).
    std::string coordinator_address;
    // Until the coordinator answers with its own interval (a fifth of its
    // liveness timeout), which the worker then keeps. Four beats fit in the
    // coordinator's default 2 s timeout.
    absl::Duration heartbeat_interval = absl::Milliseconds(500);
    // TLS for the server and for registering; default plaintext.
    TlsCredentials tls;
    // How long the worker goes on without registering before it stops
    // (a coordinator restarting takes seconds). Infinite: never stops.
    absl::Duration register_timeout = absl::Minutes(5);
    prometheus::Registry* metrics_registry = nullptr;  // optional
  };

  // `executor` runs the tasks; it must be of options.kind.
  static absl::StatusOr<std::unique_ptr<WorkerServer>> Start(
      Options options, std::unique_ptr<TaskExecutor> executor);
  ~WorkerServer();  // stops heartbeats, then the server

  int port() const;
  std::string address() const;  // as advertised to the coordinator
  // What the tasks run on: "cpu", "cuda:0", "cpu (CUDA not found)", or the
  // simulated device.
  std::string device() const;
  // How often it registers: options.heartbeat_interval until the
  // coordinator gives its interval, then that.
  absl::Duration heartbeat_interval() const;
  // Blocks until Shutdown(), or until the worker gave up registering:
  // then UNAVAILABLE saying with what, for how long.
  absl::Status Wait();
  void Shutdown();

 private:
  struct Impl;
  explicit WorkerServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_WORKER_SERVER_H_
