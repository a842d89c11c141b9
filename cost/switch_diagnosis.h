// Why a job switched, or why it never did: over its phase controller's
// checks, how often each test failed and the check where it came closest
// (the least margin: the test's statistic over its bound, below 1 passes),
// with the trials' t-tests. Per-job text for hptctl, the report and the page.
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

// Why a job that switched did, in one line: the step it switched after,
// the check that passed both tests and started the trials, and the trial's
// verdict ("after step 29: both tests passed at step 24; after the LoRA
// trial, no significant difference between full and LoRA losses (t-test p
// 0.717)"). Empty when the job has not switched.
std::string SwitchWhy(const Job& job);

// Whether the job has trained steps and switched nothing (no LoRA phase,
// no layer on its own): every step trained as GPU-only training would, so
// HpT saved nothing.
bool TrainedWithoutSwitch(const Job& job);
// Why such a job saved nothing, to follow "nothing": ": without a switch
// every step ..."; " yet: without ..." while it may still switch (running,
// or failed or cancelled, which a resume continues), not once it succeeded.
std::string NothingSavedWhy(const Job& job);

}  // namespace hpt

#endif  // HPT_COST_SWITCH_DIAGNOSIS_H_
