#include "common/net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hpt {

absl::StatusOr<HostPort> ParseHostPort(const std::string& address,
                                       const std::string& flag) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " '", address, "' is not host:port (e.g. 127.0.0.1:50051)"));
  }
  HostPort hp;
  hp.host = address.substr(0, colon);
  if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  if (!absl::SimpleAtoi(address.substr(colon + 1), &hp.port) || hp.port < 0 ||
      hp.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " '", address, "' has no valid port (0..65535)"));
  }
  return hp;
}

absl::StatusOr<int> PickFreePort(const std::string& host) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(),
                &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", host, "' is not an IPv4 address"));
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  socklen_t len = sizeof(addr);
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) {
    return absl::UnavailableError(absl::StrCat("cannot bind a port on ", host));
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) {
      return absl::UnavailableError(absl::StrCat("cannot write '", tmp, "'"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot rename '", tmp, "' to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace hpt
