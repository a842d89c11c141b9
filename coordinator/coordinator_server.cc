#include "coordinator/coordinator_server.h"

#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/device_kind.h"
#include "common/grpc_setup.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "coordinator/dispatch/grpc_worker_client.h"
#include "coordinator/dispatch/worker_pool.h"
#include "coordinator/exposure.h"
#include "coordinator/job_service.h"
#include "coordinator/jobs/coordinator_metrics.h"
#include "coordinator/jobs/job_manager.h"
#include "coordinator/worker_registry_service.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "workers/rendezvous_store.h"

namespace hpt {

struct CoordinatorServer::Impl {
  Options options;
  int port = 0;
  std::unique_ptr<CoordinatorMetrics> metrics;
  std::unique_ptr<WorkerPool> pool;
  std::unique_ptr<RendezvousStore> rendezvous;
  // The job lifecycle's parts, in the order they are built: each is given
  // the ones before it, and they go in reverse (the manager stops the
  // scheduler's jobs before the runner and the registry go).
  std::unique_ptr<JobStore> store;
  std::unique_ptr<JobRegistry> registry;
  std::unique_ptr<JobRunner> runner;
  std::unique_ptr<JobScheduler> scheduler;
  std::unique_ptr<JobManager> jobs;
  std::unique_ptr<JobQueries> queries;
  std::unique_ptr<TokenTable> tokens;  // outlives job_service
  std::vector<std::string> warnings;
  std::unique_ptr<JobServiceImpl> job_service;
  std::unique_ptr<WorkerRegistryImpl> registry_service;
  std::unique_ptr<grpc::Server> server;
  std::thread metrics_thread;
  absl::Mutex mu;
  bool stopping ABSL_GUARDED_BY(mu) = false;

  // Builds the registry, runner, scheduler, manager and queries.
  void BuildJobs();
  // Builds and starts the gRPC server on options.listen_address.
  absl::Status Serve();

  // Keeps hpt_workers_up current.
  void MetricsLoop() {
    while (true) {
      for (DeviceKind::Name kind : kDeviceKinds) {
        metrics->SetWorkersUp(KindName(kind), static_cast<int>(pool->Live(kind).size()));
      }
      absl::MutexLock lock(&mu);
      if (mu.AwaitWithTimeout(absl::Condition(&stopping), absl::Seconds(1))) {
        return;
      }
    }
  }
};

namespace {

// The worker pool with the --workers entries ("kind=host:port") in it.
absl::StatusOr<std::unique_ptr<WorkerPool>> MakePool(const CoordinatorServer::Options& options) {
  WorkerPool::Options pool_options;
  pool_options.liveness_timeout = options.worker_liveness_timeout;
  auto pool = std::make_unique<WorkerPool>(pool_options);
  for (const std::string& w : options.static_workers) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--workers entry '", w, "' is not kind=host:port (e.g. gpu=127.0.0.1:50061)"));
    }
    RETURN_IF_ERROR(ParseHostPort(w.substr(eq + 1), "--workers").status());
    ASSIGN_OR_RETURN(
        DeviceKind::Name kind,
        ParseDeviceKind(absl::StrCat("--workers entry '", w, "': kind"), w.substr(0, eq)));
    pool->AddStatic(w.substr(eq + 1), kind);
  }
  return pool;
}

// How jobs reach a worker: a gRPC client with the server's TLS and task
// deadline, whose calls are counted in `metrics` (may be null) and which
// marks its worker down in `pool` when it is gone or let a deadline pass.
JobRunner::ClientFactory GrpcClients(const CoordinatorServer::Options& options,
                                     CoordinatorMetrics* metrics, WorkerPool* pool) {
  GrpcWorkerClient::Options client_options;
  client_options.task_deadline = options.task_deadline;
  client_options.tls = options.tls;
  return [client_options, metrics, pool](const std::string& address, DeviceKind::Name k) {
    const std::string kind = KindName(k);
    GrpcWorkerClient::Options o = client_options;
    o.on_rpc = [metrics, kind, pool, address](const std::string& method, const std::string& code,
                                              double seconds) {
      if (metrics != nullptr) metrics->ObserveRpc(kind, method, code, seconds);
      // The worker is gone: no later job is placed on it before it is heard
      // from again (instead of for the liveness timeout).
      // So is one that let a call's deadline pass (stopped, or hung).
      if (code == "UNAVAILABLE" || code == "DEADLINE_EXCEEDED") pool->MarkDown(address);
    };
    return std::make_unique<GrpcWorkerClient>(address, o);
  };
}

}  // namespace

CoordinatorServer::CoordinatorServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

void CoordinatorServer::Impl::BuildJobs() {
  JobRegistry::Options registry_options;
  registry_options.metrics = metrics.get();
  registry_options.store = store.get();
  registry_options.state_dir = options.state_dir;
  registry = std::make_unique<JobRegistry>(registry_options);

  JobRunner::Options runner_options = options.runner;
  runner_options.state_dir = options.state_dir;
  runner_options.client_factory = GrpcClients(options, metrics.get(), pool.get());
  // The rendezvous store starts with the first data-parallel job.
  runner_options.rendezvous = [this]() -> absl::StatusOr<RendezvousStore*> {
    absl::MutexLock lock(&mu);
    if (rendezvous == nullptr) {
      ASSIGN_OR_RETURN(rendezvous, RendezvousStore::Start(options.rendezvous_host));
    }
    return rendezvous.get();
  };
  runner = std::make_unique<JobRunner>(runner_options, registry.get(), pool.get());
  JobRunner* run = runner.get();
  scheduler = std::make_unique<JobScheduler>(
      options.max_running_jobs, [run](const std::string& job_id) { run->Run(job_id); });
  jobs = std::make_unique<JobManager>(
      options.jobs, JobManager::Parts{registry.get(), runner.get(), scheduler.get(), pool.get()});
  queries = std::make_unique<JobQueries>(registry.get(), pool.get(), runner_options.client_factory);
}

absl::Status CoordinatorServer::Impl::Serve() {
  grpc::ServerBuilder builder;
  ConfigureServerBuilder(builder);
  builder.SetMaxReceiveMessageSize(kMaxApiMessageBytes);
  builder.AddListeningPort(options.listen_address, ServerCredentials(options.tls), &port);
  builder.RegisterService(job_service.get());
  builder.RegisterService(registry_service.get());
  server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", options.listen_address,
                                               "' (is another coordinator running there?)"));
  }
  SetServing(*server, {JobService::service_full_name(), WorkerRegistry::service_full_name()},
             true);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    Options options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  const Options& o = impl->options;
  if (o.metrics_registry != nullptr) {
    impl->metrics = std::make_unique<CoordinatorMetrics>(*o.metrics_registry);
  }
  ASSIGN_OR_RETURN(impl->pool, MakePool(o));
  if (!o.state_dir.empty()) {
    ASSIGN_OR_RETURN(impl->store, JobStore::Open(o.state_dir));
  }
  impl->BuildJobs();
  if (!o.tokens_file.empty()) {
    ASSIGN_OR_RETURN(TokenTable tokens, TokenTable::Load(o.tokens_file));
    impl->tokens = std::make_unique<TokenTable>(std::move(tokens));
  }
  if (std::optional<std::string> w = ExposureWarning(
          {o.listen_address, o.published_on, o.tls.enabled(), impl->tokens != nullptr})) {
    impl->warnings.push_back(*w);
  }
  impl->job_service = std::make_unique<JobServiceImpl>(impl->jobs.get(), impl->queries.get(),
                                                       impl->tokens.get(), impl->warnings, o.tls);
  // Workers beat five times within the liveness timeout.
  impl->registry_service = std::make_unique<WorkerRegistryImpl>(
      impl->pool.get(), absl::ToDoubleSeconds(o.worker_liveness_timeout) / 5, o.tls);
  RETURN_IF_ERROR(impl->Serve());
  if (impl->metrics != nullptr) {
    Impl* raw = impl.get();
    impl->metrics_thread = std::thread([raw] { raw->MetricsLoop(); });
  }
  return std::unique_ptr<CoordinatorServer>(new CoordinatorServer(std::move(impl)));
}

CoordinatorServer::~CoordinatorServer() {
  Shutdown();
  // Cancels and joins the jobs before their parts and the pool go.
  impl_->queries.reset();
  impl_->jobs.reset();
  impl_->scheduler.reset();
  impl_->runner.reset();
  impl_->registry.reset();
}

int CoordinatorServer::port() const { return impl_->port; }
JobManager& CoordinatorServer::jobs() { return *impl_->jobs; }
JobQueries& CoordinatorServer::queries() { return *impl_->queries; }

const TokenTable* CoordinatorServer::tokens() const { return impl_->tokens.get(); }

const std::vector<std::string>& CoordinatorServer::warnings() const { return impl_->warnings; }
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
