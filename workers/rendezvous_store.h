// RendezvousStore: the c10d TCPStore server through which data-parallel GPU
// workers find each other (the coordinator hosts it, as torchrun's c10d
// rendezvous does). Torch-free header; LibTorch stays in the .cc.
//
//   ASSIGN_OR_RETURN(auto store, RendezvousStore::Start("127.0.0.1"));
//   request.set_store_port(store->port());
#ifndef HPT_WORKERS_RENDEZVOUS_STORE_H_
#define HPT_WORKERS_RENDEZVOUS_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace hpt {

class RendezvousStore {
 public:
  // Listens on `host` only (an address or a name; the coordinator passes
  // --rendezvous_host, loopback by default) at a port the kernel picks.
  static absl::StatusOr<std::unique_ptr<RendezvousStore>> Start(
      const std::string& host);
  ~RendezvousStore();

  const std::string& host() const { return host_; }
  int port() const { return port_; }

 private:
  struct Impl;
  RendezvousStore(std::string host, int port, std::unique_ptr<Impl> impl);
  std::string host_;
  int port_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_RENDEZVOUS_STORE_H_
