#include "common/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/net.h"
#include "prometheus/gauge.h"
#include "prometheus/text_serializer.h"

namespace hpt {
namespace {

void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

void RegisterBuildInfo(prometheus::Registry& registry,
                       const std::string& component) {
  prometheus::BuildGauge()
      .Name("hpt_build_info")
      .Help("Build of this process; always 1.")
      .Register(registry)
      .Add({{"component", component}, {"version", kHptVersion}})
      .Set(1);
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, const std::string& component) {
  absl::StatusOr<HostPort> hp = ParseHostPort(address, "--metrics");
  if (!hp.ok()) return hp.status();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(hp->port));
  const std::string host = hp->host == "localhost" ? "127.0.0.1" : hp->host;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics host '", hp->host, "' is not an IPv4 address"));
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->registry_ = std::make_shared<prometheus::Registry>();
  RegisterBuildInfo(*server->registry_, component);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on '", address, "': ", why));
  }
  server->listen_fd_ = fd;
  server->port_ = ntohs(addr.sin_port);
  server->thread_ = std::thread([s = server.get()] { s->ServeLoop(); });
  return server;
}

MetricsServer::~MetricsServer() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

std::string MetricsServer::Render() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

void MetricsServer::ServeLoop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;  // wake up to check stopping_
    const int connection = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    Answer(connection);
    close(connection);
  }
}

void MetricsServer::Answer(int connection) {
  timeval timeout{2, 0};
  setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string request;
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    const ssize_t n = recv(connection, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
  if (absl::StartsWith(request, "GET /metrics ") ||
      absl::StartsWith(request, "GET /metrics?")) {
    body = Render();
  } else if (absl::StartsWith(request, "GET / ")) {
    type = "text/plain; charset=utf-8";
    body = "HpT metrics: see /metrics\n";
  } else {
    status = "404 Not Found";
    type = "text/plain; charset=utf-8";
    body = "only GET /metrics is served here\n";
  }
  SendAll(connection, absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                                   "\r\nContent-Length: ", body.size(),
                                   "\r\nConnection: close\r\n\r\n", body));
}

}  // namespace hpt
