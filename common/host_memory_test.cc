#include "common/host_memory.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(HostMemoryTest, ReadsMemAvailableInBytes) {
  EXPECT_EQ(ParseMemAvailable("MemTotal:       24682516 kB\n"
                              "MemFree:         1000000 kB\n"
                              "MemAvailable:   20000000 kB\n"
                              "Buffers:          123456 kB\n"),
            20000000.0 * 1024);
  EXPECT_EQ(ParseMemAvailable("MemTotal: 1 kB\n"), std::nullopt);      // a kernel before 3.14
  EXPECT_EQ(ParseMemAvailable("MemAvailable: lots\n"), std::nullopt);  // not a number
  EXPECT_EQ(ParseMemAvailable("MemAvailable: 5 MB\n"), std::nullopt);  // not the kernel's unit
}

// This machine's: a Linux kernel says, and it is some memory, not all of
// the address space.
TEST(HostMemoryTest, ThisMachineSaysHowMuchIsAvailable) {
  const std::optional<double> bytes = AvailableMemoryBytes();
  ASSERT_TRUE(bytes.has_value());
  EXPECT_GT(*bytes, 16.0 * (1 << 20));
  EXPECT_LT(*bytes, 1e15);
}

}  // namespace
}  // namespace hpt
