// PagesServer: the coordinator's live pages over HTTP (cpp-httplib, from
// Debian's libcpp-httplib-dev), beside the gRPC port and /metrics:
//
//   GET /                     every job the caller may see
//   GET /jobs/ID              one job (pages/job_page.h), re-read every 2 s
//                             while it runs; ?part=content gives only the
//                             part that changes
//
// With TLS files it serves HTTPS (the coordinator's --tls_cert/--tls_key);
// with a token table every request needs a token: an
// "Authorization: Bearer TOKEN" header, the hpt_token cookie, or ?token=
// once (answered with the cookie, HttpOnly and SameSite=Strict, and a
// redirect that drops the token from the address). A user sees their own
// jobs, an admin all (auth.h).
//
// Pages come from a PageSource: the JobManager in the coordinator
// (JobManagerPages), anything else in tests and benchmarks.
//
//   ASSIGN_OR_RETURN(auto pages, PagesServer::Start(options, &source));
#ifndef HPT_COORDINATOR_PAGES_SERVER_H_
#define HPT_COORDINATOR_PAGES_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

namespace hpt {

class JobManager;
class JobQueries;
class TokenTable;

class PageSource {
 public:
  virtual ~PageSource() = default;
  virtual std::vector<Job> List() = 0;
  virtual absl::StatusOr<Job> Get(const std::string& job_id) = 0;
  virtual absl::StatusOr<JobHistory> History(const std::string& job_id, int max_points) = 0;
  // NOT_FOUND before the job's first step.
  virtual absl::StatusOr<std::shared_ptr<const WorkRecord>> Record(const std::string& job_id) = 0;
};

// The coordinator's jobs as pages.
std::unique_ptr<PageSource> JobManagerPages(JobManager* jobs, JobQueries* queries);

class PagesServer {
 public:
  struct Options {
    std::string address = "127.0.0.1:9452";  // host:port; port 0 picks one
    std::string tls_cert, tls_key;           // both or neither: HTTPS
    const TokenTable* tokens = nullptr;      // null: no authentication
    int threads = 4;
  };
  static absl::StatusOr<std::unique_ptr<PagesServer>> Start(const Options& options, PageSource* source);
  ~PagesServer();  // stops serving

  int port() const;

 private:
  struct Impl;
  explicit PagesServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_PAGES_SERVER_H_
