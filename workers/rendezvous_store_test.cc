#include "workers/rendezvous_store.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <string>
#include <vector>

#include "common/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

// The local addresses (hex, as the kernel prints them) of the listening
// TCP sockets on `port`.
std::vector<std::string> ListenersOn(int port) {
  std::vector<std::string> found;
  for (const testing::Listener& l : testing::Listeners()) {
    if (l.port == port) found.push_back(l.address);
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
