#include "common/cost_util.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(CostUtilTest, SumsTimesAndCountersButKeepsMaxima) {
  CostReport total, a, b;
  a.set_device_kind(DeviceKind::reram);
  a.set_measured_s(1);
  a.set_simulated_s(2);
  a.set_energy_j(3);
  (*a.mutable_counters())["adc_conversions"] = 10;
  (*a.mutable_counters())["max_cell_writes"] = 1;
  b.set_measured_s(0.5);
  b.set_energy_j(1);
  (*b.mutable_counters())["adc_conversions"] = 5;
  (*b.mutable_counters())["max_cell_writes"] = 3;
  (*b.mutable_counters())["worst_wear"] = 0.25;
  AddCost(a, &total);
  AddCost(b, &total);
  EXPECT_EQ(total.device_kind(), DeviceKind::reram);
  EXPECT_DOUBLE_EQ(total.measured_s(), 1.5);
  EXPECT_DOUBLE_EQ(total.simulated_s(), 2);
  EXPECT_DOUBLE_EQ(total.energy_j(), 4);
  EXPECT_DOUBLE_EQ(total.counters().at("adc_conversions"), 15);
  EXPECT_DOUBLE_EQ(total.counters().at("max_cell_writes"), 3);
  EXPECT_DOUBLE_EQ(total.counters().at("worst_wear"), 0.25);
}

}  // namespace
}  // namespace hpt
