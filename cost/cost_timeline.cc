#include "cost/cost_timeline.h"

#include <algorithm>

#include "common/device_kind.h"

namespace hpt {

CostTimeline::CostTimeline(InterconnectConfig interconnect)
    : interconnect_(interconnect) {}

int CostTimeline::Add(const std::string& device, DeviceKind::Name kind, double duration_s,
                      double energy_j, const std::vector<int>& deps, int64_t bytes_in) {
  double ready = 0, transfer = 0;
  bool remote = false;
  for (int d : deps) {
    ready = std::max(ready, finish_[d]);
    remote = remote || device_of_[d] != device;
  }
  if (remote && bytes_in > 0) {
    transfer = interconnect_.latency_s + double(bytes_in) / interconnect_.bandwidth_bytes_per_s;
    ready += transfer;
    transfer_energy_j_ += double(bytes_in) * interconnect_.energy_per_byte_j;
    transfer_bytes_ += bytes_in;
  }
  const double start = std::max(ready, device_free_[device]);
  const double finish = start + duration_s;
  device_free_[device] = finish;
  busy_s_[KindName(kind)] += duration_s;
  energy_j_[KindName(kind)] += energy_j;
  start_.push_back(start);
  finish_.push_back(finish);
  transfer_.push_back(transfer);
  device_of_.push_back(device);
  makespan_s_ = std::max(makespan_s_, finish);
  return int(finish_.size()) - 1;
}

double CostTimeline::total_energy_j() const {
  double total = transfer_energy_j_;
  for (const auto& [kind, e] : energy_j_) total += e;
  return total;
}

}  // namespace hpt
