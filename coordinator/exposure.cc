#include "coordinator/exposure.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/net.h"

namespace hpt {

bool IsLoopbackHost(const std::string& host) {
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h == "localhost" || h == "::1" || absl::StartsWith(h, "127.");
}

std::optional<std::string> ExposureWarning(const Exposure& e) {
  if (e.tls && e.tokens) return std::nullopt;
  std::string where = e.published_on;
  if (where.empty()) {
    absl::StatusOr<HostPort> listen = ParseHostPort(e.listen_address, "--listen");
    // An address that does not parse is refused elsewhere, naming the flag.
    if (!listen.ok()) return std::nullopt;
    where = listen->host;
  }
  if (IsLoopbackHost(where)) return std::nullopt;
  const char* missing = !e.tls && !e.tokens ? "without TLS or tokens"
                        : !e.tokens        ? "without tokens (no --tokens_file)"
                                           : "without TLS (no --tls_cert/--tls_key/--tls_ca)";
  return absl::StrCat(
      "the JobService is reachable on ", where, " ", missing,
      ": anyone who reaches it can submit, list, cancel and export jobs and register workers. "
      "Serve on 127.0.0.1, or use TLS and bearer tokens (docs/security.md; "
      "deploy/docker-compose.secure.yml)");
}

}  // namespace hpt
