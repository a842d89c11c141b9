// Why a job never switched: over its phase controller's checks, how often
// each test failed and the check where it came closest (the least margin:
// the test's statistic over its bound, below 1 passes), with the trials'
// t-tests. A per-job diagnostic for the text report and the page.
#ifndef HPT_COST_SWITCH_DIAGNOSIS_H_
#define HPT_COST_SWITCH_DIAGNOSIS_H_

#include <string>
#include <vector>

#include "proto/job_service.pb.h"

namespace hpt {

// Lines without a trailing newline ("never switched: ..." once the job has
// ended, "no switch yet: ..." before); empty when the job switched or is
// not an HpT job.
std::vector<std::string> ClosestApproach(const Job& job);


}  // namespace hpt

#endif  // HPT_COST_SWITCH_DIAGNOSIS_H_
