#include "workers/worker_server.h"

#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/device_kind.h"
#include "common/grpc_setup.h"
#include "common/grpc_status.h"
#include "common/net.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "proto/worker_service.grpc.pb.h"
#include "workers/worker_metrics.h"
#include "workers/worker_service.h"

namespace hpt {

struct WorkerServer::Impl {
  Options options;
  int port = 0;
  std::string address;
  std::unique_ptr<TaskExecutor> executor;
  std::unique_ptr<WorkerMetrics> metrics;
  std::unique_ptr<WorkerServiceImpl> service;
  std::unique_ptr<grpc::Server> server;
  std::thread heartbeat;
  absl::Mutex mu;
  bool stopping ABSL_GUARDED_BY(mu) = false;

  absl::Status gave_up ABSL_GUARDED_BY(mu);
  // options.heartbeat_interval until the coordinator gives its own.
  absl::Duration beat_interval ABSL_GUARDED_BY(mu);

  absl::Duration Beat() {
    absl::MutexLock lock(&mu);
    return beat_interval;
  }

  RegisterWorkerRequest RegisterRequest() const {
    RegisterWorkerRequest request;
    request.set_address(address);
    request.set_kind(options.kind);
    request.set_name(options.name.empty() ? absl::StrCat(KindName(options.kind), "@", address)
                                          : options.name);
    request.set_device_id(executor->device_id());
    return request;
  }

  // Registers on every beat. While registering fails: says why on every
  // try, backs off (doubling up to 30 s), and gives up after
  // register_timeout without registering, stopping the server.
  void HeartbeatLoop() {
    auto stub =
        WorkerRegistry::NewStub(MakeChannel(options.coordinator_address, options.tls));
    bool registered = false;
    absl::Time unregistered_since = absl::Now();
    absl::Duration wait = Beat();
    for (int attempt = 1;; ++attempt) {
      RegisterWorkerResponse response;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      const grpc::Status status = stub->RegisterWorker(&context, RegisterRequest(), &response);
      if (status.ok()) {
        if (!registered) {
          // Each line in one write: the main thread prints to stdout meanwhile.
          std::cerr << absl::StrCat("registered with coordinator ", options.coordinator_address,
                                    "\n");
        }
        registered = true;
        attempt = 0;
        // The coordinator says how often it wants to hear from its workers.
        if (response.heartbeat_interval_s() > 0) {
          absl::MutexLock lock(&mu);
          beat_interval = absl::Seconds(response.heartbeat_interval_s());
        }
        wait = Beat();
      } else {
        if (registered) {
          registered = false;
          unregistered_since = absl::Now();
          wait = Beat();
        }
        const absl::Duration without = absl::Now() - unregistered_since;
        if (without >= options.register_timeout) {
          GiveUp(absl::UnavailableError(absl::StrCat(
              "no coordinator at ", options.coordinator_address, " accepted this worker for ",
              absl::FormatDuration(absl::Trunc(without, absl::Seconds(1))), " (", attempt,
              " tries; the last: ", status.error_message(), "); giving up")));
          return;
        }
        // The last wait ends at the bound, not past it.
        wait = std::min(wait, options.register_timeout - without);
        std::cerr << absl::StrCat(
            "cannot register with coordinator ", options.coordinator_address, " (try ", attempt,
            "): ", status.error_message(), "; next try in ", absl::FormatDuration(wait),
            ", giving up after ", absl::FormatDuration(options.register_timeout), " without one\n");
      }
      absl::MutexLock lock(&mu);
      if (mu.AwaitWithTimeout(absl::Condition(&stopping), wait)) return;
      if (!registered) wait = std::min(2 * wait, absl::Seconds(30));
    }
  }

  // Stops serving: Wait returns `why`.
  void GiveUp(absl::Status why) {
    {
      absl::MutexLock lock(&mu);
      gave_up = std::move(why);
    }
    SetServing(*server, {WorkerService::service_full_name()}, false);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
};

WorkerServer::WorkerServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(
    Options options, std::unique_ptr<TaskExecutor> executor) {
  if (absl::Status kind = CheckWorkerKind(options.kind); !kind.ok()) return kind;
  if (executor == nullptr) return absl::InvalidArgumentError("a worker needs an executor");
  absl::StatusOr<HostPort> listen =
      ParseHostPort(options.listen_address, "--listen");
  if (!listen.ok()) return listen.status();

  auto impl = std::make_unique<Impl>();
  impl->executor = std::move(executor);
  if (options.metrics_registry != nullptr) {
    impl->metrics =
        std::make_unique<WorkerMetrics>(*options.metrics_registry, KindName(options.kind));
  }
  impl->service = std::make_unique<WorkerServiceImpl>(options.kind, impl->executor.get(),
                                                      impl->metrics.get(), options.tls);

  grpc::ServerBuilder builder;
  ConfigureServerBuilder(builder);
  builder.AddListeningPort(options.listen_address,
                           ServerCredentials(options.tls), &impl->port);
  builder.RegisterService(impl->service.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on '", options.listen_address, "'"));
  }
  SetServing(*impl->server, {WorkerService::service_full_name()}, true);
  impl->address = options.advertise_address.empty()
                      ? absl::StrCat(listen->host, ":", impl->port)
                      : options.advertise_address;
  impl->options = std::move(options);
  {
    absl::MutexLock lock(&impl->mu);
    impl->beat_interval = impl->options.heartbeat_interval;
  }
  if (!impl->options.coordinator_address.empty()) {
    Impl* raw = impl.get();
    impl->heartbeat = std::thread([raw] { raw->HeartbeatLoop(); });
  }
  return std::unique_ptr<WorkerServer>(new WorkerServer(std::move(impl)));
}

WorkerServer::~WorkerServer() { Shutdown(); }

int WorkerServer::port() const { return impl_->port; }
std::string WorkerServer::address() const { return impl_->address; }

std::string WorkerServer::device() const { return impl_->executor->device_name(); }

absl::Status WorkerServer::Wait() {
  impl_->server->Wait();
  absl::MutexLock lock(&impl_->mu);
  return impl_->gave_up;
}

void WorkerServer::Shutdown() {
  {
    absl::MutexLock lock(&impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  if (impl_->heartbeat.joinable()) impl_->heartbeat.join();
  SetServing(*impl_->server, {WorkerService::service_full_name()}, false);
  impl_->server->Shutdown(std::chrono::system_clock::now() +
                          std::chrono::seconds(5));
}

absl::Duration WorkerServer::heartbeat_interval() const { return impl_->Beat(); }

}  // namespace hpt
