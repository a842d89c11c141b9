// hpt_coordinator: accepts training jobs and runs them on workers.
//
//   hpt_coordinator --listen=127.0.0.1:50051 --metrics=127.0.0.1:9451
#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/process_setup.h"
#include "common/server_main.h"
#include "common/status_macros.h"
#include "common/tls_flags.h"
#include "coordinator/coordinator_server.h"
#include "coordinator/jobs/state_dir.h"
#include "coordinator/pages_server.h"
#include "data/text_file.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "host:port for JobService and WorkerRegistry; port 0 picks one.");
ABSL_FLAG(std::string, metrics, "127.0.0.1:9451",
          "host:port for Prometheus /metrics; empty disables.");
ABSL_FLAG(std::string, http, "127.0.0.1:9452",
          "host:port for the live pages (/ and /jobs/ID); HTTPS with --tls_cert, and a token "
          "with --tokens_file; empty disables.");
ABSL_FLAG(std::string, workers, "",
          "Comma-separated kind=host:port workers known without registration.");
ABSL_FLAG(double, worker_timeout_s, 2,
          "A registered worker silent this long is down (workers heartbeat every 0.5 s): "
          "its calls in flight end and its jobs go back to their newest checkpoint.");
ABSL_FLAG(int, worker_wait_s, absl::ToInt64Seconds(hpt::JobRunner::Options().worker_wait),
          "How long a job waits for the workers it needs.");
ABSL_FLAG(int, max_running_jobs, hpt::CoordinatorServer::Options().max_running_jobs,
          "Jobs that train (or wait for workers) at once; the rest queue. Jobs share "
          "workers.");
ABSL_FLAG(std::string, tokens_file, "",
          "Bearer tokens of the JobService's users, \"TOKEN USER [admin]\" per line; "
          "empty: no authentication.");
ABSL_FLAG(int, task_deadline_s, 300, "Deadline of each worker task call.");
ABSL_FLAG(std::string, rendezvous_host, "127.0.0.1",
          "Address of the c10d store data-parallel workers rendezvous at.");
ABSL_FLAG(std::string, data_root, ".",
          "Comma-separated folders job data files must lie under (symlinks resolved); "
          "default: the working directory. Folders that do not exist are skipped.");
ABSL_FLAG(int64_t, max_data_file_mb, 1024, "Largest data file a job may name, in MiB.");
ABSL_FLAG(int64_t, max_data_cells, 50'000'000,
          "Most rows x columns a job's loaded series may hold (checked before allocating).");
ABSL_FLAG(double, max_load_s, absl::ToDoubleSeconds(hpt::JobManager::Options().max_load_time),
          "Longest a job's data may take to load (the job is LOADING meanwhile); past it "
          "the submit fails with DEADLINE_EXCEEDED.");
ABSL_FLAG(std::string, state_dir, "",
          "Folder of the durable job registry (jobs.db, SQLite in WAL mode), checkpoints "
          "and trained models: jobs and their ids survive a restart. Empty: the default, "
          "$XDG_STATE_HOME/hpt, else ~/.local/state/hpt.");
ABSL_FLAG(bool, no_state, false,
          "Keep jobs, checkpoints and trained models in memory only: all are lost when the "
          "coordinator ends, and job ids start again. For tests and throwaway runs.");
ABSL_FLAG(std::string, data_root_hint, "",
          "What a refusal of a data file outside the data roots tells the user to do, in "
          "the way this coordinator was started (launchers set it); empty: name --data_root.");
ABSL_FLAG(std::string, port_file, "",
          "Write 'grpc=PORT metrics=PORT http=PORT' here once serving.");

namespace {

// The state folder the flags ask for, made if missing, and said on stderr:
// --state_dir, else the default folder; "" with --no_state, said loudly.
absl::StatusOr<std::string> StateDir(const std::string& flag, bool none) {
  if (none) {
    if (!flag.empty()) {
      return absl::InvalidArgumentError("--state_dir and --no_state contradict each other");
    }
    std::cerr << "hpt_coordinator: WARNING: --no_state: jobs, checkpoints and trained models "
                 "are kept in memory only; they are lost when this process ends, and job ids "
                 "start again at job-000001"
              << std::endl;
    return std::string();
  }
  std::string dir = flag;
  if (dir.empty()) {
    absl::StatusOr<std::string> found = hpt::DefaultStateDir(std::getenv);
    if (!found.ok()) return found.status();
    dir = *found;
  }
  if (absl::Status made = hpt::MakeDirectories(dir); !made.ok()) return made;
  std::cerr << "hpt_coordinator: state (jobs, checkpoints, trained models) in " << dir
            << (flag.empty() ? " (the default; --state_dir=DIR for another, --no_state for none)"
                             : "")
            << std::endl;
  return dir;
}

// Job data files: where they may be (--data_root) and how big.
hpt::DataLimits DataLimitsFromFlags() {
  hpt::DataLimits limits;
  limits.max_file_bytes = absl::GetFlag(FLAGS_max_data_file_mb) << 20;
  limits.max_cells = absl::GetFlag(FLAGS_max_data_cells);
  limits.widen_hint = absl::GetFlag(FLAGS_data_root_hint);
  for (absl::string_view root : absl::StrSplit(absl::GetFlag(FLAGS_data_root), ',',
                                               absl::SkipEmpty())) {
    absl::StatusOr<std::string> resolved =
        hpt::ResolveDataPath(std::string(root), hpt::DataLimits(), /*directory=*/true);
    if (!resolved.ok()) {
      std::cerr << "hpt_coordinator: skipping --data_root entry: " << resolved.status().message()
                << std::endl;
      continue;
    }
    limits.roots.push_back(*resolved);
  }
  if (limits.roots.empty()) {
    // No usable root: no job may read a file (synthetic data still works).
    limits.roots.push_back("/nonexistent-hpt-data-root");
  }
  std::cerr << "hpt_coordinator: job data files are read under " << hpt::DescribeRoots(limits)
            << std::endl;
  return limits;
}

// The numeric flags' ranges, checked before anything starts: outside them
// the coordinator would run on and fail every job (a 0 s task deadline, a
// negative file limit) or wrap (--max_data_file_mb is shifted into bytes).
absl::Status CheckNumericFlags() {
  constexpr double kDay = 86400;
  struct Range {
    const char* flag;
    double value, lo, hi;
    bool lo_open;  // value must be > lo, not >= lo
  };
  const Range ranges[] = {
      {"--worker_timeout_s", absl::GetFlag(FLAGS_worker_timeout_s), 0, kDay, true},
      {"--worker_wait_s", double(absl::GetFlag(FLAGS_worker_wait_s)), 0, kDay, false},
      {"--task_deadline_s", double(absl::GetFlag(FLAGS_task_deadline_s)), 1, kDay, false},
      {"--max_running_jobs", double(absl::GetFlag(FLAGS_max_running_jobs)), 1, 1e6, false},
      {"--max_load_s", absl::GetFlag(FLAGS_max_load_s), 0, kDay, true},
      // 8 TiB: the most a file limit in bytes holds without overflow, and then some.
      {"--max_data_file_mb", double(absl::GetFlag(FLAGS_max_data_file_mb)), 1, 1 << 23, false},
      {"--max_data_cells", double(absl::GetFlag(FLAGS_max_data_cells)), 1, 1e15, false},
  };
  for (const Range& r : ranges) {
    const bool above = r.lo_open ? r.value > r.lo : r.value >= r.lo;
    if (!above || !(r.value <= r.hi)) {
      return absl::InvalidArgumentError(absl::StrFormat("%s must be %s %.15g and <= %.15g, got %.15g",
                                                        r.flag, r.lo_open ? ">" : ">=", r.lo,
                                                        r.hi, r.value));
    }
  }
  return absl::OkStatus();
}

// The server's options from the flags; INVALID_ARGUMENT naming a bad flag.
absl::StatusOr<hpt::CoordinatorServer::Options> OptionsFromFlags() {
  RETURN_IF_ERROR(CheckNumericFlags());
  hpt::CoordinatorServer::Options options;
  // Workers and the coordinator prove themselves with certificates; users
  // with tokens (--tokens_file), so client certificates are optional here.
  ASSIGN_OR_RETURN(options.tls, hpt::TlsFromFlags(/*require_client_certs=*/false));
  options.listen_address = absl::GetFlag(FLAGS_listen);
  // A malformed address or a port out of range is refused here, naming the
  // flag, rather than bound to some other port.
  RETURN_IF_ERROR(hpt::ParseHostPort(options.listen_address, "--listen").status());
  if (!absl::GetFlag(FLAGS_workers).empty()) {
    options.static_workers =
        absl::StrSplit(absl::GetFlag(FLAGS_workers), ',', absl::SkipEmpty());
  }
  options.worker_liveness_timeout = absl::Seconds(absl::GetFlag(FLAGS_worker_timeout_s));
  options.runner.worker_wait = absl::Seconds(absl::GetFlag(FLAGS_worker_wait_s));
  options.task_deadline = absl::Seconds(absl::GetFlag(FLAGS_task_deadline_s));
  options.rendezvous_host = absl::GetFlag(FLAGS_rendezvous_host);
  options.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  options.max_running_jobs = absl::GetFlag(FLAGS_max_running_jobs);
  ASSIGN_OR_RETURN(options.state_dir,
                   StateDir(absl::GetFlag(FLAGS_state_dir), absl::GetFlag(FLAGS_no_state)));
  options.jobs.max_load_time = absl::Seconds(absl::GetFlag(FLAGS_max_load_s));
  options.jobs.data_limits = DataLimitsFromFlags();
  // docker-compose says where the host publishes the port (HPT_BIND).
  if (const char* published = std::getenv("HPT_PUBLISHED_ON")) options.published_on = published;
  return options;
}

// The live pages (--http), or null where they are off or, on the default
// port, where that port is taken (another coordinator on this machine):
// that costs the pages, not the coordinator; a port asked for must be had.
absl::StatusOr<std::unique_ptr<hpt::PagesServer>> StartPages(
    bool http_asked, hpt::CoordinatorServer* running, hpt::PageSource* source) {
  if (absl::GetFlag(FLAGS_http).empty()) return nullptr;
  hpt::PagesServer::Options page_options;
  page_options.address = absl::GetFlag(FLAGS_http);
  page_options.tls_cert = hpt::TlsFlagFiles().cert;
  page_options.tls_key = hpt::TlsFlagFiles().key;
  page_options.tokens = running->tokens();
  absl::StatusOr<std::unique_ptr<hpt::PagesServer>> started =
      hpt::PagesServer::Start(page_options, source);
  if (started.ok() || http_asked || !absl::IsUnavailable(started.status())) return started;
  std::cerr << "hpt_coordinator: no live pages: " << started.status().message()
            << " (give --http=HOST:PORT, or --http= to turn them off)" << std::endl;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  hpt::UseShortThreadSpins(argv);
  absl::SetProgramUsageMessage("HpT coordinator: schedules training jobs.");
  absl::ParseCommandLine(argc, argv);
  bool http_asked = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    http_asked |= arg == "--http" || arg.rfind("--http=", 0) == 0;
  }
  absl::StatusOr<hpt::CoordinatorServer::Options> options = OptionsFromFlags();
  if (!options.ok()) return hpt::StartFailure("hpt_coordinator", options.status());
  std::unique_ptr<hpt::MetricsServer> metrics;
  if (!absl::GetFlag(FLAGS_metrics).empty()) {
    auto started = hpt::MetricsServer::Start(absl::GetFlag(FLAGS_metrics), "coordinator");
    if (!started.ok()) return hpt::StartFailure("hpt_coordinator", started.status());
    metrics = std::move(*started);
    options->metrics_registry = &metrics->registry();
  }
  auto server = hpt::CoordinatorServer::Start(*options);
  if (!server.ok()) {
    std::cerr << "hpt_coordinator: " << server.status().message() << std::endl;
    return 1;
  }
  hpt::CoordinatorServer* running = server->get();
  for (const std::string& warning : running->warnings()) {
    std::cerr << "hpt_coordinator: WARNING: " << warning << std::endl;
  }
  std::unique_ptr<hpt::PageSource> page_source =
      hpt::JobManagerPages(&running->jobs(), &running->queries());
  absl::StatusOr<std::unique_ptr<hpt::PagesServer>> pages =
      StartPages(http_asked, running, page_source.get());
  if (!pages.ok()) return hpt::StartFailure("hpt_coordinator", pages.status());
  hpt::ShutdownOnSignals([running] { running->Shutdown(); });
  const int metrics_port = metrics ? metrics->port() : 0;
  const int http_port = *pages ? (*pages)->port() : 0;
  std::cout << "hpt_coordinator grpc port=" << running->port()
            << " metrics_port=" << metrics_port << " http_port=" << http_port << std::endl;
  if (absl::Status written = hpt::WritePortFile(absl::GetFlag(FLAGS_port_file), running->port(),
                                                 metrics_port, http_port);
      !written.ok()) {
    std::cerr << "hpt_coordinator: " << written.message() << std::endl;
  }
  running->Wait();
  return 0;
}
