// CostTimeline: lays one step's tasks on their devices' timelines
// (docs/cost-model.md). A task starts when its device is free and its dependencies have
// finished and their outputs have crossed the interconnect to it (no
// transfer between tasks on one device). The step's simulated time is the
// makespan; energy is the tasks' energy plus the interconnect's.
//
//   CostTimeline t(interconnect);
//   int f = t.Add("gpu0", DeviceKind::gpu, 1e-3, 0.2, {}, 0);
//   int b = t.Add("reram0", DeviceKind::reram, 2e-4, 0.01, {f}, 4096);
//   double step_s = t.makespan_s();
//
// Not thread-safe.
#ifndef HPT_COST_COST_TIMELINE_H_
#define HPT_COST_COST_TIMELINE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/work.pb.h"

namespace hpt {

struct InterconnectConfig {
  // PCIe 4.0 x16: 32 GB/s per direction (PCI-SIG, PCIe 4.0 base spec).
  double bandwidth_bytes_per_s = 32e9;
  // One hop through a switch and DMA setup, order of a microsecond.
  double latency_s = 1e-6;
  // Off-package links: ~10 pJ/bit (Keckler et al., "GPUs and the future of
  // parallel computing", IEEE Micro 31(5), 2011) = 80 pJ per byte.
  double energy_per_byte_j = 80e-12;
};

class CostTimeline {
 public:
  explicit CostTimeline(InterconnectConfig interconnect = {});

  // Returns the task's id. `bytes_in` cross the interconnect from the
  // dependencies' devices (once, if any dependency is on another device).
  int Add(const std::string& device, DeviceKind::Name kind, double duration_s, double energy_j,
          const std::vector<int>& deps, int64_t bytes_in);

  double makespan_s() const { return makespan_s_; }
  double finish_s(int task) const { return finish_[task]; }
  double start_s(int task) const { return start_[task]; }
  // Seconds the task's inputs spent crossing the interconnect before it.
  double transfer_s(int task) const { return transfer_[task]; }
  double transfer_energy_j() const { return transfer_energy_j_; }
  int64_t transfer_bytes() const { return transfer_bytes_; }
  // Busy time and energy per device kind, by KindName (the keys of
  // PhaseCost's maps).
  const std::map<std::string, double>& busy_s() const { return busy_s_; }
  const std::map<std::string, double>& energy_j() const { return energy_j_; }
  double total_energy_j() const;

 private:
  InterconnectConfig interconnect_;
  std::vector<double> start_, finish_, transfer_;
  std::vector<std::string> device_of_;
  std::map<std::string, double> device_free_;
  std::map<std::string, double> busy_s_, energy_j_;
  double makespan_s_ = 0;
  double transfer_energy_j_ = 0;
  int64_t transfer_bytes_ = 0;
};

}  // namespace hpt

#endif  // HPT_COST_COST_TIMELINE_H_
