// Adding up CostReports: times, energies and counters sum, except counters
// named max_* or worst_* (e.g. max_cell_writes, worst_wear), which keep
// the maximum.
#ifndef HPT_COMMON_COST_UTIL_H_
#define HPT_COMMON_COST_UTIL_H_

#include "proto/common.pb.h"

namespace hpt {

void AddCost(const CostReport& part, CostReport* total);

}  // namespace hpt

#endif  // HPT_COMMON_COST_UTIL_H_
