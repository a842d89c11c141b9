// The rows of a job's comparison table (CostComparison.baselines): one per
// modelled GPU-only baseline, and those measured on a worker's device.
#ifndef HPT_COST_BASELINE_ROWS_H_
#define HPT_COST_BASELINE_ROWS_H_

#include <string>

#include "cost/cost_comparison.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

namespace hpt {

// Baseline `name`'s row from the comparison under it; `source` says where
// its GPU-only figures come from.
BaselineComparison BaselineRow(const std::string& name, const std::string& source,
                               const CostComparison& c);

// Appends to `out` the baselines measured on a worker's device: the job's
// own full-phase GPU steps (libtorch), then each probed baseline
// (record.probes); `libtorch`: the phases modelled under the libtorch
// baseline, whose full phase the measured step replaces. HpT's devices
// stay modelled in every row.
void AddMeasuredRows(const WorkRecord& record, const RecordedPhases& libtorch,
                     const ComparisonInputs& in, CostComparison* out);

}  // namespace hpt

#endif  // HPT_COST_BASELINE_ROWS_H_
