#include "coordinator/coordinator_server.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_setup.h"
#include "common/net.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/grpc_worker_client.h"
#include "coordinator/job_manager.h"
#include "coordinator/job_service.h"
#include "coordinator/rendezvous_store.h"
#include "coordinator/worker_pool.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"

namespace hpt {

struct CoordinatorServer::Impl {
  Options options;
  int port = 0;
  std::unique_ptr<CoordinatorMetrics> metrics;
  std::unique_ptr<WorkerPool> pool;
  std::unique_ptr<RendezvousStore> rendezvous;
  std::unique_ptr<JobStore> store;  // outlives `jobs`, which writes to it
  std::unique_ptr<JobManager> jobs;
  std::unique_ptr<TokenTable> tokens;  // outlives job_service
  std::unique_ptr<JobServiceImpl> job_service;
  std::unique_ptr<WorkerRegistryImpl> registry_service;
  std::unique_ptr<grpc::Server> server;
  std::thread metrics_thread;
  absl::Mutex mu;
  bool stopping ABSL_GUARDED_BY(mu) = false;

  // Keeps hpt_workers_up current.
  void MetricsLoop() {
    while (true) {
      for (const char* kind : {"gpu", "reram", "systolic"}) {
        metrics->SetWorkersUp(kind, static_cast<int>(pool->Live(kind).size()));
      }
      absl::MutexLock lock(&mu);
      if (mu.AwaitWithTimeout(absl::Condition(&stopping), absl::Seconds(1))) {
        return;
      }
    }
  }
};

CoordinatorServer::CoordinatorServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    Options options) {
  auto impl = std::make_unique<Impl>();
  if (options.metrics_registry != nullptr) {
    impl->metrics = std::make_unique<CoordinatorMetrics>(*options.metrics_registry);
  }
  WorkerPool::Options pool_options;
  pool_options.liveness_timeout = options.worker_liveness_timeout;
  impl->pool = std::make_unique<WorkerPool>(pool_options);
  for (const std::string& w : options.static_workers) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--workers entry '", w, "' is not kind=host:port (e.g. gpu=127.0.0.1:50061)"));
    }
    absl::StatusOr<HostPort> hp = ParseHostPort(w.substr(eq + 1), "--workers");
    if (!hp.ok()) return hp.status();
    impl->pool->AddStatic(w.substr(eq + 1), w.substr(0, eq));
  }

  if (!options.state_dir.empty()) {
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(options.state_dir);
    if (!store.ok()) return store.status();
    impl->store = std::move(*store);
  }
  JobManager::Options job_options;
  job_options.store = impl->store.get();
  job_options.state_dir = options.state_dir;
  job_options.max_running_jobs = options.max_running_jobs;
  job_options.metrics = impl->metrics.get();
  Impl* raw_impl = impl.get();
  const std::string rendezvous_host = options.rendezvous_host;
  job_options.rendezvous = [raw_impl, rendezvous_host]() -> absl::StatusOr<RendezvousStore*> {
    absl::MutexLock lock(&raw_impl->mu);
    if (raw_impl->rendezvous == nullptr) {
      absl::StatusOr<std::unique_ptr<RendezvousStore>> store =
          RendezvousStore::Start(rendezvous_host);
      if (!store.ok()) return store.status();
      raw_impl->rendezvous = std::move(*store);
    }
    return raw_impl->rendezvous.get();
  };
  job_options.worker_wait = options.worker_wait;
  job_options.data_limits = options.data_limits;
  job_options.max_load_time = options.max_load_time;
  CoordinatorMetrics* metrics = impl->metrics.get();
  const absl::Duration task_deadline = options.task_deadline;
  WorkerPool* pool = impl->pool.get();
  job_options.client_factory = [metrics, task_deadline, pool](const std::string& address,
                                                               const std::string& kind) {
    GrpcWorkerClient::Options client_options;
    client_options.task_deadline = task_deadline;
    client_options.on_rpc = [metrics, kind, pool, address](
                                const std::string& method, const std::string& code,
                                double seconds) {
      if (metrics != nullptr) metrics->ObserveRpc(kind, method, code, seconds);
      // The worker is gone: no later job is placed on it before it is heard
      // from again (instead of for the liveness timeout).
      // So is one that let a call's deadline pass (stopped, or hung).
      if (code == "UNAVAILABLE" || code == "DEADLINE_EXCEEDED") pool->MarkDown(address);
    };
    return std::make_unique<GrpcWorkerClient>(address, client_options);
  };
  impl->jobs = std::make_unique<JobManager>(job_options, impl->pool.get());
  if (!options.tokens_file.empty()) {
    absl::StatusOr<TokenTable> tokens = TokenTable::Load(options.tokens_file);
    if (!tokens.ok()) return tokens.status();
    impl->tokens = std::make_unique<TokenTable>(std::move(*tokens));
  }
  impl->job_service = std::make_unique<JobServiceImpl>(impl->jobs.get(), impl->tokens.get());
  impl->registry_service = std::make_unique<WorkerRegistryImpl>(
      impl->pool.get(), absl::ToDoubleSeconds(options.worker_liveness_timeout) / 5);

  grpc::ServerBuilder builder;
  ConfigureServerBuilder(builder);
  builder.SetMaxReceiveMessageSize(kMaxApiMessageBytes);
  builder.AddListeningPort(options.listen_address,
                           ServerCredentials(), &impl->port);
  builder.RegisterService(impl->job_service.get());
  builder.RegisterService(impl->registry_service.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on '", options.listen_address,
        "' (is another coordinator running there?)"));
  }
  SetServing(*impl->server,
             {JobService::service_full_name(), WorkerRegistry::service_full_name()}, true);
  impl->options = std::move(options);
  if (impl->metrics != nullptr) {
    Impl* raw = impl.get();
    impl->metrics_thread = std::thread([raw] { raw->MetricsLoop(); });
  }
  return std::unique_ptr<CoordinatorServer>(new CoordinatorServer(std::move(impl)));
}

CoordinatorServer::~CoordinatorServer() {
  Shutdown();
  impl_->jobs.reset();  // cancels and joins the scheduler before the pool goes
}

int CoordinatorServer::port() const { return impl_->port; }
JobManager& CoordinatorServer::jobs() { return *impl_->jobs; }

const TokenTable* CoordinatorServer::tokens() const { return impl_->tokens.get(); }
void CoordinatorServer::Wait() { impl_->server->Wait(); }

void CoordinatorServer::Shutdown() {
  {
    absl::MutexLock lock(&impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  if (impl_->metrics_thread.joinable()) impl_->metrics_thread.join();
  SetServing(*impl_->server,
             {JobService::service_full_name(), WorkerRegistry::service_full_name()}, false);
  impl_->server->Shutdown(std::chrono::system_clock::now() +
                          std::chrono::seconds(2));
}

}  // namespace hpt
