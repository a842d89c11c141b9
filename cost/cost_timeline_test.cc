#include "cost/cost_timeline.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

InterconnectConfig Link() {
  InterconnectConfig c;
  c.bandwidth_bytes_per_s = 1000;  // 1 KB/s: transfers easy to read
  c.latency_s = 0.5;
  c.energy_per_byte_j = 0.01;
  return c;
}

TEST(CostTimelineTest, ChainAcrossDevicesPaysTransfers) {
  CostTimeline t(Link());
  const int a = t.Add("gpu0", DeviceKind::gpu, 2.0, 1.0, {}, 0);
  const int b = t.Add("reram0", DeviceKind::reram, 1.0, 0.5, {a}, 1000);  // +0.5 +1.0 s
  EXPECT_DOUBLE_EQ(t.finish_s(b), 2.0 + 1.5 + 1.0);
  const int c = t.Add("reram0", DeviceKind::reram, 1.0, 0.5, {b}, 1000);  // same device
  EXPECT_DOUBLE_EQ(t.finish_s(c), 5.5);
  EXPECT_DOUBLE_EQ(t.makespan_s(), 5.5);
  EXPECT_EQ(t.transfer_bytes(), 1000);
  EXPECT_DOUBLE_EQ(t.transfer_energy_j(), 10.0);
  EXPECT_DOUBLE_EQ(t.total_energy_j(), 12.0);
  EXPECT_DOUBLE_EQ(t.busy_s().at("reram"), 2.0);
}

TEST(CostTimelineTest, IndependentDevicesOverlapAndOneDeviceSerialises) {
  CostTimeline t(Link());
  const int a = t.Add("sys0", DeviceKind::systolic, 3.0, 0, {}, 0);
  const int b = t.Add("sys1", DeviceKind::systolic, 2.0, 0, {}, 0);
  EXPECT_DOUBLE_EQ(t.makespan_s(), 3.0);  // concurrent
  const int c = t.Add("sys1", DeviceKind::systolic, 1.0, 0, {}, 0);
  EXPECT_DOUBLE_EQ(t.finish_s(c), 3.0);  // waits for sys1
  const int d = t.Add("sys0", DeviceKind::systolic, 1.0, 0, {a, b}, 0);  // no bytes: no transfer
  EXPECT_DOUBLE_EQ(t.finish_s(d), 4.0);
}

}  // namespace
}  // namespace hpt
