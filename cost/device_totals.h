// What a job's devices did, summed by kind from their cost counters: the
// GPU's kernels and how much of its simulated time waits on the host, the
// LoRA phase's ReRAM and systolic time and the systolic array's DRAM
// stalls. The report, `hptctl whatif` and the comparison's notes read one
// sum.
//
//   const DeviceTotals t = DeviceTotalsOf(job.device_costs());
//   if (t.gpu_s > 0) share = t.launch_bound_s / t.gpu_s;
#ifndef HPT_COST_DEVICE_TOTALS_H_
#define HPT_COST_DEVICE_TOTALS_H_

#include "proto/job_service.pb.h"

namespace hpt {

struct DeviceTotals {
  double gpu_kernels = 0, gpu_s = 0;
  double launch_bound_s = 0;  // of gpu_s, waiting on the host (the counter launch_bound_s)
  double reram_s = 0, systolic_s = 0;
  double systolic_cycles = 0, stall_cycles = 0;  // the systolic array's, and its DRAM stalls

  void Add(const DeviceCost& device);
};

// Over any range of DeviceCost (a Job's repeated field, a vector).
template <typename Costs>
DeviceTotals DeviceTotalsOf(const Costs& costs) {
  DeviceTotals t;
  for (const DeviceCost& d : costs) t.Add(d);
  return t;
}

}  // namespace hpt

#endif  // HPT_COST_DEVICE_TOTALS_H_
