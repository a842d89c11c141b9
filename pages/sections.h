// The job page's sections (job_page.h), one function each. Internal to
// //pages.
#ifndef HPT_PAGES_SECTIONS_H_
#define HPT_PAGES_SECTIONS_H_

#include <string>

#include "pages/job_page.h"

namespace hpt {

// Colours by device kind and by phase, shared by the plots and legends.
std::string KindColour(const std::string& kind);
std::string PhaseColour(CostPhase::Name phase);
// A legend: coloured squares with labels.
std::string Legend(const std::vector<std::pair<std::string, std::string>>& entries);

std::string LossSection(const Job& job, const JobHistory& history);
std::string ChecksTable(const HptStatus& hpt);
// Each station's test forecasts against the truth, named and in the
// data's unit where the data gives them (job.data()).
std::string PredictionsSection(const Job& job, const JobHistory& history);
std::string CostSection(const Job& job);
std::string TimelineSection(const JobPageInput& input);
std::string ChipSection(const Job& job);

}  // namespace hpt

#endif  // HPT_PAGES_SECTIONS_H_
