// A job as a page: what `hptctl report --format=html` writes as one
// self-contained file and what the coordinator serves live at /jobs/ID.
// Sections: the headline figures; training loss per step (bucket mean with
// its min-max band) and test loss per epoch, with every phase-controller
// check, trial window and the switch marked; time and energy by phase and
// by device against each GPU-only baseline; one step's timeline per device
// (Gantt); the ReRAM chip's layers, copies, tiles and wear; predictions
// against truth on the test split; and the text report.
//
// Plots are inline SVG drawn here, with the numbers they show in data-*
// attributes (what tests/pages_browser_test reads back in Chromium). No
// script, font or style comes from the network.
//
//   JobPageInput in{job, history, timeline};
//   std::string html = RenderJobPage(in, {.live = false});
#ifndef HPT_PAGES_JOB_PAGE_H_
#define HPT_PAGES_JOB_PAGE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/record_costing.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

namespace hpt {

struct JobPageInput {
  Job job;
  JobHistory history;
  std::optional<StepTimeline> timeline;  // one step's tasks, simulated
  std::string timeline_note;             // why there is none, when there is none
};

struct PageOptions {
  // Live: the page re-reads its content every 2 s while the job runs.
  bool live = false;
  std::string jobs_href;  // a link back to the job list; empty: none
};

std::string RenderJobPage(const JobPageInput& input, const PageOptions& options);
// The part a live page replaces: <div id="content" data-state=...>...</div>.
std::string RenderJobContent(const JobPageInput& input);
// Every job, newest first, linking to /jobs/ID.
std::string RenderJobsPage(const std::vector<Job>& jobs, const PageOptions& options);
std::string RenderJobsContent(const std::vector<Job>& jobs);

// The step a page shows as a Gantt chart: the first LoRA-phase step after a
// switch, else step 0; its tasks costed from the record.
absl::StatusOr<StepTimeline> PageTimeline(const WorkRecord& record);
// Sets input->timeline from `record` (PageTimeline), or timeline_note to
// why there is none; a null record is a job with no step recorded yet.
void SetPageTimeline(const WorkRecord* record, JobPageInput* input);

}  // namespace hpt

#endif  // HPT_PAGES_JOB_PAGE_H_
