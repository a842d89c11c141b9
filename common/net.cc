#include "common/net.h"

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

}  // namespace hpt
