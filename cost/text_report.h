// The text report of a job: its phases and the switch, where tasks ran,
// the ReRAM chip, HpT against each GPU-only baseline, test metrics and the
// phase controller's decisions. `hptctl report` prints it and the job pages
// show it, so it lives below both.
//
//   std::cout << FormatReport(job);
#ifndef HPT_COST_TEXT_REPORT_H_
#define HPT_COST_TEXT_REPORT_H_

#include <string>

#include "proto/job_service.pb.h"

namespace hpt {

std::string StateName(JobState state);       // "running"
// Succeeded, failed or cancelled: nothing more will run.
bool JobEnded(JobState state);
std::string FormatDuration(double seconds);  // "1m05s"
// A t-test's outcome in words ("no difference: switch"); empty when the
// event is not a trial's end or its reason says instead ("inconclusive:
// ... trial extended").
std::string TrialVerdict(const PhaseEvent& e);
// "skill 0.242 over persistence (RMSE 0.1409 m/s)": the test skill beside
// persistence's RMSE in `unit` (" m/s", or ""); "" where persistence was
// not scored. The report and hptctl status say it in these words.
std::string SkillOverPersistence(const QualityMetrics& q, const std::string& unit);
// The HpT report as tables: phases and their step ranges, the switch
// decision and its statistics, test metrics, wall time, simulated time and
// energy per device kind and phase, and the HpT-vs-GPU-only ratios.
std::string FormatReport(const Job& job);
// The GPU-only baseline that trains fastest (the one HpT must beat for the
// paper's claim), among rows of one kind: the modelled rows (the reference
// GPU), or the rows measured on this job's GPU (`measured`; a CPU's wall
// time is never a GPU baseline). Null when no such row has a figure.
const BaselineComparison* FastestBaseline(const CostComparison& comparison, bool measured);
// The report's tables of HpT against each GPU baseline, modelled and
// measured, and which GPU-only baseline is fastest.
std::string FormatBaselines(const CostComparison& comparison);

}  // namespace hpt

#endif  // HPT_COST_TEXT_REPORT_H_
