#include "workers/rendezvous_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace hpt {
namespace {

// A listening TCP socket on `host` (a name or an address) at a port the
// kernel picks. c10d's TCPStore would listen on every interface; given
// this socket (TCPStoreOptions::masterListenFd) it serves only here.
absl::StatusOr<int> ListenOn(const std::string& host, int* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), "0", &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rendezvous_host '", host, "' does not resolve: ", gai_strerror(rc)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
      *port = bound.ss_family == AF_INET6
                  ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                  : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      freeaddrinfo(found);
      return fd;
    }
    error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ": ", error));
}

}  // namespace

struct RendezvousStore::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

RendezvousStore::RendezvousStore(std::string host, int port,
                                 std::unique_ptr<Impl> impl)
    : host_(std::move(host)), port_(port), impl_(std::move(impl)) {}

RendezvousStore::~RendezvousStore() = default;

absl::StatusOr<std::unique_ptr<RendezvousStore>> RendezvousStore::Start(
    const std::string& host) {
  int port = 0;
  absl::StatusOr<int> fd = ListenOn(host, &port);
  if (!fd.ok()) return fd.status();
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(port);
    options.isServer = true;
    options.waitWorkers = false;
    options.masterListenFd = *fd;  // the store owns it from here
    auto impl = std::make_unique<Impl>();
    impl->store = c10::make_intrusive<c10d::TCPStore>(host, options);
    const int listening = impl->store->getPort();
    return std::unique_ptr<RendezvousStore>(
        new RendezvousStore(host, listening, std::move(impl)));
  } catch (const std::exception& e) {
    close(*fd);
    return absl::UnavailableError(absl::StrCat(
        "cannot start the rendezvous store on ", host, ": ", e.what()));
  }
}

}  // namespace hpt
