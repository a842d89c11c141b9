// Whether a coordinator serves its JobService where anyone can use it: on an
// address beyond loopback without both TLS and bearer tokens, anyone who
// reaches the port can list every job with its spec, cancel and export
// another client's jobs, and register a fake worker that is then sent a
// model's weights (the pattern of Ray's unauthenticated job API,
// CVE-2023-48022). The coordinator says so at start-up and to every client
// that asks (JobService.GetServerInfo, `hptctl health`).
//
// Inside a container the address it listens on (0.0.0.0) says nothing: what
// counts is where the host publishes the port. docker-compose passes that
// as HPT_PUBLISHED_ON (deploy/docker-compose.yml: HPT_BIND, default
// 127.0.0.1).
//
//   std::optional<std::string> w = ExposureWarning({"0.0.0.0:50051", "", false, false});
#ifndef HPT_COORDINATOR_EXPOSURE_H_
#define HPT_COORDINATOR_EXPOSURE_H_

#include <optional>
#include <string>

namespace hpt {

struct Exposure {
  std::string listen_address;  // --listen
  // Where the port is published, when that is not the listen address
  // (HPT_PUBLISHED_ON: a host address, or empty).
  std::string published_on;
  bool tls = false;
  bool tokens = false;
};

// True for localhost, 127.0.0.0/8 and ::1.
bool IsLoopbackHost(const std::string& host);

// The warning to give, or nullopt where the JobService is on loopback only,
// or has both TLS and tokens.
std::optional<std::string> ExposureWarning(const Exposure& exposure);

}  // namespace hpt

#endif  // HPT_COORDINATOR_EXPOSURE_H_
