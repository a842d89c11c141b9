#include "common/launch_mode.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(LaunchModeTest, UnspecifiedAndUnknownModesAreEager) {
  EXPECT_EQ(LaunchOrEager(Launch::LAUNCH_UNSPECIFIED), Launch::eager);
  EXPECT_EQ(LaunchOrEager(Launch::Mode(7)), Launch::eager);
  EXPECT_EQ(LaunchOrEager(Launch::graph), Launch::graph);
  EXPECT_EQ(LaunchOrEager(Launch::eager), Launch::eager);
}

TEST(LaunchModeTest, EachModeHasItsFlagName) {
  EXPECT_EQ(LaunchName(Launch::LAUNCH_UNSPECIFIED), "eager");
  EXPECT_EQ(LaunchName(Launch::eager), "eager");
  EXPECT_EQ(LaunchName(Launch::graph), "graph");
}

}  // namespace
}  // namespace hpt
