// CoordinatorServer: a running coordinator. Serves JobService and
// WorkerRegistry (plus health and reflection). It builds and owns the
// worker pool, the rendezvous store for data-parallel workers and the job
// lifecycle's parts (registry, runner, scheduler), and hands those to the
// job manager and the job queries.
//
//   CoordinatorServer::Options o;
//   o.listen_address = "127.0.0.1:0";
//   ASSIGN_OR_RETURN(auto server, CoordinatorServer::Start(o));
#ifndef HPT_COORDINATOR_COORDINATOR_SERVER_H_
#define HPT_COORDINATOR_COORDINATOR_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc_setup.h"
#include "coordinator/jobs/job_manager.h"
#include "coordinator/jobs/job_queries.h"
#include "coordinator/jobs/job_runner.h"
#include "data/text_file.h"
#include "prometheus/registry.h"

namespace hpt {

class TokenTable;

class CoordinatorServer {
 public:
  struct Options {
    std::string listen_address = "127.0.0.1:50051";
    // Workers known without registration, as "kind=host:port".
    std::vector<std::string> static_workers;
    absl::Duration worker_liveness_timeout = absl::Seconds(2);
    absl::Duration task_deadline = absl::Minutes(5);
    // Host the c10d rendezvous store listens on (reachable by workers).
    std::string rendezvous_host = "127.0.0.1";
    prometheus::Registry* metrics_registry = nullptr;  // optional
    // The jobs' own settings: how long a job waits for workers and how
    // often it fails over (runner; its client factory, rendezvous and state
    // folder are this server's); where data files may be and how long they
    // may take to load (jobs; the default data limits allow any path, and
    // hpt_coordinator sets them from --data_root).
    JobRunner::Options runner;
    JobManager::Options jobs;
    // Folder of the durable job registry (jobs.db, SQLite); empty: jobs
    // live in memory and are gone when the coordinator stops.
    std::string state_dir;
    // TLS for the server and for its calls to workers; default plaintext.
    TlsCredentials tls;
    // Where the host publishes listen_address's port, when it is not that
    // address (a container's; exposure.h). Empty: the listen address.
    std::string published_on;
    // Bearer tokens for the JobService (auth.h); empty: no authentication.
    std::string tokens_file;
    int max_running_jobs = 4;
  };

  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(
      Options options);
  ~CoordinatorServer();

  int port() const;
  JobManager& jobs();
  JobQueries& queries();
  // The JobService's users (--tokens_file); null without authentication.
  const TokenTable* tokens() const;
  // What it tells every client (JobService.GetServerInfo): that it serves
  // where anyone can use it, if it does (exposure.h).
  const std::vector<std::string>& warnings() const;
  void Wait();
  void Shutdown();

 private:
  struct Impl;
  explicit CoordinatorServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_COORDINATOR_SERVER_H_
