// Small helpers for addresses given on command lines.
#ifndef HPT_COMMON_NET_H_
#define HPT_COMMON_NET_H_

#include <string>

#include "absl/status/statusor.h"

namespace hpt {

struct HostPort {
  std::string host;
  int port = 0;
};

// Parses "host:port" or "[v6]:port"; `flag` names the source in errors.
absl::StatusOr<HostPort> ParseHostPort(const std::string& address,
                                       const std::string& flag);

}  // namespace hpt

#endif  // HPT_COMMON_NET_H_
