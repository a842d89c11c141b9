#include "coordinator/rendezvous_store.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

// The local addresses (hex, as the kernel prints them) of the listening
// TCP sockets on `port`, from /proc/net/tcp and /proc/net/tcp6.
std::vector<std::string> ListenersOn(int port) {
  std::vector<std::string> found;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const size_t colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;  // 0A: LISTEN
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) {
        found.push_back(local.substr(0, colon));
      }
    }
  }
  return found;
}

TEST(RendezvousStoreTest, ListensOnLoopbackOnly) {
  auto store = RendezvousStore::Start("127.0.0.1");
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_GT((*store)->port(), 0);
  // 0100007F is 127.0.0.1 in the kernel's byte order; a store on every
  // interface would show 00000000 (or the all-zero IPv6 address).
  EXPECT_THAT(ListenersOn((*store)->port()), ::testing::ElementsAre("0100007F"));
}

TEST(RendezvousStoreTest, ClientsMeetThroughIt) {
  auto store = RendezvousStore::Start("localhost");
  ASSERT_TRUE(store.ok()) << store.status();
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>((*store)->port());
  options.isServer = false;
  c10d::TCPStore a("127.0.0.1", options), b("127.0.0.1", options);
  a.set("rank0", std::vector<uint8_t>{1, 2, 3});
  EXPECT_EQ(b.get("rank0"), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(b.add("count", 5), 5);
  EXPECT_EQ(a.add("count", 2), 7);
}

TEST(RendezvousStoreTest, UnknownHostIsNamed) {
  auto store = RendezvousStore::Start("no-such-host.invalid");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(store.status().message()), ::testing::HasSubstr("no-such-host.invalid"));
}

}  // namespace
}  // namespace hpt
