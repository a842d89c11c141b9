#include "coordinator/rendezvous_store.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/str_cat.h"

namespace hpt {

struct RendezvousStore::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

RendezvousStore::RendezvousStore(std::string host, int port,
                                 std::unique_ptr<Impl> impl)
    : host_(std::move(host)), port_(port), impl_(std::move(impl)) {}

RendezvousStore::~RendezvousStore() = default;

absl::StatusOr<std::unique_ptr<RendezvousStore>> RendezvousStore::Start(
    const std::string& host) {
  try {
    c10d::TCPStoreOptions options;
    options.port = 0;  // let the kernel choose
    options.isServer = true;
    options.waitWorkers = false;
    auto impl = std::make_unique<Impl>();
    impl->store = c10::make_intrusive<c10d::TCPStore>(host, options);
    const int port = impl->store->getPort();
    return std::unique_ptr<RendezvousStore>(
        new RendezvousStore(host, port, std::move(impl)));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "cannot start the rendezvous store on ", host, ": ", e.what()));
  }
}

}  // namespace hpt
