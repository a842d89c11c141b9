#include "common/check_windows.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

// Every rule but trend checks after three windows; trend after its own
// count, never fewer than three.
TEST(CheckWindowsTest, TheFirstCheckClosesTheThirdWindowOrTrendsOwn) {
  for (SwitchRule::Name rule :
       {SwitchRule::paper, SwitchRule::consecutive, SwitchRule::plateau, SwitchRule::layerwise}) {
    EXPECT_EQ(FirstCheckWindows(rule, 7), 3) << SwitchRule::Name_Name(rule);
  }
  EXPECT_EQ(FirstCheckWindows(SwitchRule::trend, 5), 5);
  EXPECT_EQ(FirstCheckWindows(SwitchRule::trend, 2), 3);
}

TEST(CheckWindowsTest, OrdinalsInWordsThenInFigures) {
  EXPECT_EQ(Ordinal(3), "third");
  EXPECT_EQ(Ordinal(5), "fifth");
  EXPECT_EQ(Ordinal(10), "tenth");
  EXPECT_EQ(Ordinal(11), "11th");
  EXPECT_EQ(Ordinal(22), "22nd");
  EXPECT_EQ(Ordinal(103), "103rd");
  EXPECT_EQ(Ordinal(112), "112th");
}

}  // namespace
}  // namespace hpt
