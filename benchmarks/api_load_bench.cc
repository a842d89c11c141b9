// The JobService under load: --jobs tiny jobs submitted to a coordinator
// with one GPU worker (--max_running_jobs of them training at once, the
// rest queued), while --threads clients ask GetJob for random jobs at
// --rps in total for --seconds. Runs twice in one process: plaintext
// without tokens (the baseline), then TLS with bearer tokens (certificates
// made by deploy/make-certs in a temporary folder), and prints latency percentiles
// and the ratio of the two p99s.
//
//   bazel run //benchmarks:api_load_bench -- --jobs=50 --rps=500 --seconds=10
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_setup.h"
#include "common/test_util.h"
#include "proto/job_service.grpc.pb.h"

ABSL_FLAG(int, jobs, 50, "Jobs submitted.");
ABSL_FLAG(int, rps, 500, "GetJob calls per second, all clients together.");
ABSL_FLAG(int, seconds, 10, "Length of the measured load.");
ABSL_FLAG(int, threads, 8, "Client threads.");

namespace hpt {
namespace {

using testing::ChildProcess;
using testing::RunfilePath;

struct Result {
  double p50_ms = 0, p99_ms = 0, max_ms = 0, achieved_rps = 0;
  int errors = 0, calls = 0, succeeded_jobs = 0;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "api_load_bench: %s\n", what.c_str());
  return 1;
}

// --threads clients calling GetJob on random jobs of `ids` at --rps in all
// for --seconds; the latencies' percentiles and the rate achieved.
Result GetJobsAtRate(JobService::Stub& stub, const std::vector<std::string>& ids,
                     const std::function<void(grpc::ClientContext*)>& authorize) {
  const int threads = absl::GetFlag(FLAGS_threads);
  const double interval_s = double(threads) / absl::GetFlag(FLAGS_rps);
  const absl::Duration length = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  std::vector<std::vector<double>> latencies(threads);
  std::atomic<int> errors{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 rng(t);
      absl::Time next = start + absl::Seconds(interval_s * t / threads);
      while (next < start + length) {
        absl::SleepFor(next - absl::Now());
        grpc::ClientContext context;
        authorize(&context);
        GetJobRequest request;
        request.set_job_id(ids[rng() % ids.size()]);
        Job job;
        const auto t0 = std::chrono::steady_clock::now();
        grpc::Status s = stub.GetJob(&context, request, &job);
        latencies[t].push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        if (!s.ok()) ++errors;
        next += absl::Seconds(interval_s);
      }
    });
  }
  for (auto& c : clients) c.join();
  const double took = absl::ToDoubleSeconds(absl::Now() - start);
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  Result r;
  r.calls = int(all.size());
  r.errors = errors;
  r.achieved_rps = all.size() / took;
  if (!all.empty()) {
    r.p50_ms = all[all.size() / 2];
    r.p99_ms = all[std::min(all.size() - 1, size_t(all.size() * 0.99))];
    r.max_ms = all.back();
  }
  return r;
}

absl::StatusOr<Result> RunOnce(const std::string& dir, bool secure) {
  const std::string name = secure ? "secure" : "plain";
  // Each process its own role's certificate (deploy/make-certs).
  auto tls = [&](const std::string& role) -> std::vector<std::string> {
    if (!secure) return {};
    const std::string at = dir + "/pki/" + role;
    return {"--tls_cert=" + at + "/cert.pem", "--tls_key=" + at + "/key.pem",
            "--tls_ca=" + at + "/ca.pem"};
  };
  std::vector<std::string> argv = {RunfilePath("coordinator/hpt_coordinator"),
                                   "--listen=127.0.0.1:0", "--metrics=",
                                   "--port_file=" + dir + "/" + name + ".port",
                                   "--state_dir=" + dir + "/" + name + "-state"};
  if (secure) argv.push_back("--tokens_file=" + dir + "/tokens");
  for (std::string& flag : tls("coordinator")) argv.push_back(std::move(flag));
  auto coordinator = ChildProcess::Start(argv, dir + "/" + name + "-coordinator.log");
  if (!coordinator.ok()) return coordinator.status();
  auto ports = testing::WaitForPortFile(dir + "/" + name + ".port", *coordinator, absl::Seconds(60));
  if (!ports.ok()) return ports.status();
  const std::string at = absl::StrCat("127.0.0.1:", ports->grpc);
  std::vector<std::string> wargv = {RunfilePath("workers/main/hpt_worker"),
                                    "--kind=gpu",
                                    "--listen=127.0.0.1:0",
                                    "--metrics=",
                                    "--threads=1",
                                    "--coordinator=" + at};
  for (std::string& flag : tls("worker-gpu")) wargv.push_back(std::move(flag));
  auto worker = ChildProcess::Start(wargv, dir + "/" + name + "-worker.log");
  if (!worker.ok()) return worker.status();

  TlsCredentials client_tls;
  if (secure) {
    absl::StatusOr<TlsCredentials> loaded = LoadTls({"", "", dir + "/pki/ca.pem"}, false);
    if (!loaded.ok()) return loaded.status();
    client_tls = *loaded;
  }
  auto stub = JobService::NewStub(MakeChannel(at, client_tls));
  auto authorize = [&](grpc::ClientContext* c) {
    if (secure) c->AddMetadata("authorization", "Bearer load-token-0123456789");
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  };
  std::vector<std::string> ids;
  for (int i = 0; i < absl::GetFlag(FLAGS_jobs); ++i) {
    grpc::ClientContext context;
    authorize(&context);
    SubmitJobRequest request;
    request.set_spec_text(absl::StrCat("name: \"load-", i,
                                       "\" model { preset: \"tiny\" } training { epochs: 2 "
                                       "max_steps_per_epoch: 20 } hpt { placement: gpu }"));
    Job job;
    grpc::Status s = stub->SubmitJob(&context, request, &job);
    if (!s.ok()) return absl::InternalError("submit: " + s.error_message());
    ids.push_back(job.job_id());
  }
  Result r = GetJobsAtRate(*stub, ids, authorize);
  ListJobsResponse list;
  grpc::ClientContext context;
  authorize(&context);
  if (stub->ListJobs(&context, ListJobsRequest(), &list).ok()) {
    for (const Job& j : list.jobs()) r.succeeded_jobs += j.state() == SUCCEEDED;
  }
  worker->Stop();
  coordinator->Stop();
  return r;
}

int Main() {
  const std::string dir = testing::MakeTempDir("api_load_bench");
  if (absl::Status made = testing::MakeClusterCertificates(dir + "/pki"); !made.ok()) {
    return Fail(std::string(made.message()));
  }
  std::ofstream(dir + "/tokens") << "load-token-0123456789 loader admin\n";
  std::printf("%d jobs, GetJob at %d/s from %d clients for %d s\n", absl::GetFlag(FLAGS_jobs),
              absl::GetFlag(FLAGS_rps), absl::GetFlag(FLAGS_threads),
              absl::GetFlag(FLAGS_seconds));
  Result results[2];
  for (int secure = 0; secure < 2; ++secure) {
    absl::StatusOr<Result> r = RunOnce(dir, secure == 1);
    if (!r.ok()) return Fail(std::string(r.status().message()));
    results[secure] = *r;
    std::printf("%-22s calls %6d (%.0f/s), errors %d, p50 %.2f ms, p99 %.2f ms, max %.2f ms; "
                "%d jobs succeeded during the run\n",
                secure ? "TLS + bearer tokens" : "plaintext, no tokens", r->calls,
                r->achieved_rps, r->errors, r->p50_ms, r->p99_ms, r->max_ms, r->succeeded_jobs);
  }
  std::printf("p99 ratio TLS+tokens / plaintext: %.2f\n",
              results[0].p99_ms > 0 ? results[1].p99_ms / results[0].p99_ms : 0.0);
  return 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // `bazel run` starts it in its runfiles folder (<target>.runfiles/hpt).
  setenv("TEST_SRCDIR", "..", /*overwrite=*/0);
  return hpt::Main();
}
