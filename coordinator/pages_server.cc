#include "coordinator/pages_server.h"

#include <httplib.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/net.h"
#include "coordinator/auth.h"
#include "coordinator/jobs/job_manager.h"
#include "coordinator/jobs/job_queries.h"
#include "pages/job_page.h"
#include "pages/svg.h"

namespace hpt {
namespace {

class ManagerPages : public PageSource {
 public:
  ManagerPages(JobManager* jobs, JobQueries* queries) : jobs_(jobs), queries_(queries) {}
  std::vector<Job> List() override { return jobs_->List(); }
  absl::StatusOr<Job> Get(const std::string& id) override { return jobs_->Get(id); }
  absl::StatusOr<JobHistory> History(const std::string& id, int max_points) override {
    return queries_->HistoryOf(id, max_points);
  }
  absl::StatusOr<std::shared_ptr<const WorkRecord>> Record(const std::string& id) override {
    return queries_->WorkRecordOf(id);
  }

 private:
  JobManager* jobs_;
  JobQueries* queries_;
};

constexpr char kHtml[] = "text/html; charset=utf-8";
constexpr char kCookie[] = "hpt_token";

// The token a request carries: its Authorization header, else its cookie.
std::string RequestAuthorization(const httplib::Request& req) {
  if (req.has_header("Authorization")) return req.get_header_value("Authorization");
  for (absl::string_view part : absl::StrSplit(req.get_header_value("Cookie"), ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, absl::StrCat(kCookie, "="))) return absl::StrCat("Bearer ", part);
  }
  return "";
}

void ErrorPage(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(absl::StrCat("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>", status,
                               "</title></head><body><p>", Escape(message), "</p><p><a href=\"/\">all jobs</a></p>"
                               "</body></html>\n"),
                  kHtml);
}

}  // namespace

std::unique_ptr<PageSource> JobManagerPages(JobManager* jobs, JobQueries* queries) {
  return std::make_unique<ManagerPages>(jobs, queries);
}

struct PagesServer::Impl {
  Options options;
  PageSource* source = nullptr;
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  int port = 0;

  // The caller, or nullopt after answering 401 (or a redirect that sets the
  // cookie from ?token=).
  std::optional<Caller> Authenticate(const httplib::Request& req, httplib::Response& res) const {
    if (options.tokens == nullptr) return Caller{"", true};
    if (req.has_param("token")) {
      const std::string token = req.get_param_value("token");
      const std::string bearer = "Bearer " + token;
      if (!options.tokens->Authenticate(&bearer).ok()) {
        ErrorPage(res, 401, "That token is not known to this coordinator.");
        return std::nullopt;
      }
      res.set_header("Set-Cookie", absl::StrCat(kCookie, "=", token, "; Path=/; HttpOnly; SameSite=Strict",
                                                options.tls_cert.empty() ? "" : "; Secure"));
      res.set_redirect(req.path);
      return std::nullopt;
    }
    const std::string authorization = RequestAuthorization(req);
    absl::StatusOr<Caller> caller = options.tokens->Authenticate(authorization.empty() ? nullptr : &authorization);
    if (!caller.ok()) {
      res.set_header("WWW-Authenticate", "Bearer");
      ErrorPage(res, 401,
                "This coordinator asks for a token: open this page once with ?token=YOUR_TOKEN, or send "
                "\"Authorization: Bearer YOUR_TOKEN\".");
      return std::nullopt;
    }
    return *caller;
  }

  void Jobs(const httplib::Request& req, httplib::Response& res) const {
    std::optional<Caller> caller = Authenticate(req, res);
    if (!caller.has_value()) return;
    std::vector<Job> jobs = source->List();
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [&](const Job& j) { return !MayAccess(*caller, j).ok(); }),
               jobs.end());
    std::reverse(jobs.begin(), jobs.end());  // newest first
    for (Job& j : jobs) j.clear_spec();      // the list needs none of it
    PageOptions page;
    page.live = true;
    res.set_content(req.has_param("part") ? RenderJobsContent(jobs) : RenderJobsPage(jobs, page), kHtml);
  }

  void JobPage(const httplib::Request& req, httplib::Response& res) const {
    std::optional<Caller> caller = Authenticate(req, res);
    if (!caller.has_value()) return;
    const std::string id = req.matches[1];
    JobPageInput input;
    absl::StatusOr<Job> job = source->Get(id);
    // Another user's job reads as missing, as it does over gRPC.
    if (!job.ok() || !MayAccess(*caller, *job).ok()) return ErrorPage(res, 404, "No job '" + id + "' here.");
    input.job = std::move(*job);
    absl::StatusOr<JobHistory> history = source->History(id, 1000);
    if (history.ok()) input.history = std::move(*history);
    absl::StatusOr<std::shared_ptr<const WorkRecord>> record = source->Record(id);
    SetPageTimeline(record.ok() ? record->get() : nullptr, &input);
    PageOptions page;
    page.live = true;
    page.jobs_href = "/";
    res.set_header("Cache-Control", "no-store");
    res.set_content(req.has_param("part") ? RenderJobContent(input) : RenderJobPage(input, page), kHtml);
  }
};

absl::StatusOr<std::unique_ptr<PagesServer>> PagesServer::Start(const Options& options, PageSource* source) {
  absl::StatusOr<HostPort> address = ParseHostPort(options.address, "--http");
  if (!address.ok()) return address.status();
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("the pages' TLS needs both a certificate and a key");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->source = source;
  if (!options.tls_cert.empty()) {
    impl->server = std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
  } else {
    impl->server = std::make_unique<httplib::Server>();
  }
  if (!impl->server->is_valid()) {
    return absl::InvalidArgumentError("--http: cannot serve HTTPS with the --tls_cert/--tls_key given");
  }
  httplib::Server& s = *impl->server;
  const int threads = std::max(1, options.threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  Impl* self = impl.get();
  s.Get("/", [self](const httplib::Request& req, httplib::Response& res) { self->Jobs(req, res); });
  s.Get(R"(/jobs/([A-Za-z0-9._-]{1,128}))",
        [self](const httplib::Request& req, httplib::Response& res) { self->JobPage(req, res); });
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty()) ErrorPage(res, res.status, "Nothing at " + req.path + ".");
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    ErrorPage(res, 500, "The page could not be made; the coordinator's log says why.");
  });
  s.set_default_headers({{"Content-Security-Policy",
                          "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
                          "connect-src 'self'; img-src 'self' data:"},
                         {"X-Content-Type-Options", "nosniff"}});
  if (address->port == 0) {
    impl->port = s.bind_to_any_port(address->host);
  } else {
    impl->port = s.bind_to_port(address->host, address->port) ? address->port : -1;
  }
  if (impl->port <= 0) {
    return absl::UnavailableError(absl::StrCat("--http: cannot listen on ", options.address));
  }
  impl->thread = std::thread([self] { self->server->listen_after_bind(); });
  return std::unique_ptr<PagesServer>(new PagesServer(std::move(impl)));
}

PagesServer::PagesServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PagesServer::~PagesServer() {
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int PagesServer::port() const { return impl_->port; }

}  // namespace hpt
