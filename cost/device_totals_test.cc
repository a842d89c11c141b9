#include "cost/device_totals.h"

#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

DeviceCost Device(DeviceKind::Name kind, double simulated_s,
                  std::vector<std::pair<const char*, double>> counters) {
  DeviceCost d;
  d.set_kind(kind);
  d.mutable_cost()->set_simulated_s(simulated_s);
  for (const auto& [name, value] : counters) (*d.mutable_cost()->mutable_counters())[name] = value;
  return d;
}

// Each kind's time and counters go to its own sums; two GPU workers add.
TEST(DeviceTotalsTest, SumsEachKindsTimeAndCounters) {
  Job job;
  *job.add_device_costs() =
      Device(DeviceKind::gpu, 2.0, {{"kernels", 100}, {"launch_bound_s", 1.5}});
  *job.add_device_costs() = Device(DeviceKind::gpu, 1.0, {{"kernels", 40}});
  *job.add_device_costs() = Device(DeviceKind::reram, 0.25, {{"kernels", 7}});
  *job.add_device_costs() =
      Device(DeviceKind::systolic, 0.5, {{"cycles", 1000}, {"stall_cycles", 250}});
  const DeviceTotals t = DeviceTotalsOf(job.device_costs());
  EXPECT_DOUBLE_EQ(t.gpu_kernels, 140);
  EXPECT_DOUBLE_EQ(t.gpu_s, 3.0);
  EXPECT_DOUBLE_EQ(t.launch_bound_s, 1.5);
  EXPECT_DOUBLE_EQ(t.reram_s, 0.25);
  EXPECT_DOUBLE_EQ(t.systolic_s, 0.5);
  EXPECT_DOUBLE_EQ(t.systolic_cycles, 1000);
  EXPECT_DOUBLE_EQ(t.stall_cycles, 250);
  const std::vector<DeviceCost> none;
  EXPECT_DOUBLE_EQ(DeviceTotalsOf(none).gpu_s, 0);
}

}  // namespace
}  // namespace hpt
