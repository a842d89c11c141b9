#include "common/cost_util.h"

#include <algorithm>

#include "absl/strings/match.h"

namespace hpt {

void AddCost(const CostReport& part, CostReport* total) {
  if (total->device_kind() == DeviceKind::DEVICE_KIND_UNSPECIFIED)
    total->set_device_kind(part.device_kind());
  total->set_measured_s(total->measured_s() + part.measured_s());
  total->set_simulated_s(total->simulated_s() + part.simulated_s());
  total->set_energy_j(total->energy_j() + part.energy_j());
  auto& counters = *total->mutable_counters();
  for (const auto& [name, value] : part.counters()) {
    if (absl::StartsWith(name, "max_") || absl::StartsWith(name, "worst_")) {
      counters[name] = std::max(counters[name], value);
    } else {
      counters[name] += value;
    }
  }
}

}  // namespace hpt
