#include "cost/device_totals.h"

namespace hpt {

void DeviceTotals::Add(const DeviceCost& device) {
  const auto& counters = device.cost().counters();
  auto get = [&](const char* name) {
    auto it = counters.find(name);
    return it == counters.end() ? 0.0 : it->second;
  };
  const double s = device.cost().simulated_s();
  switch (device.kind()) {
    case DeviceKind::gpu:
      gpu_kernels += get("kernels");
      launch_bound_s += get("launch_bound_s");
      gpu_s += s;
      break;
    case DeviceKind::reram:
      reram_s += s;
      break;
    case DeviceKind::systolic:
      systolic_s += s;
      systolic_cycles += get("cycles");
      stall_cycles += get("stall_cycles");
      break;
    default:
      break;
  }
}

}  // namespace hpt
