// hptctl's commands on a job's recorded work: whatif (the coordinator
// re-costs), trace and sweep (hptctl fetches the record and re-costs it
// with the coordinator's own code, cost/record_costing.h).
#ifndef HPT_HPTCTL_COST_COMMANDS_H_
#define HPT_HPTCTL_COST_COMMANDS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "proto/job_service.grpc.pb.h"

namespace hpt {

struct CostCommandOptions {
  // Prepares each call's context (token, deadline).
  std::function<void(grpc::ClientContext*)> prepare;
  std::string format = "text";      // text, json (trace: also chrome)
  std::vector<std::string> sets;    // --set KEY=VALUE
  std::vector<std::string> grids;   // --grid KEY=V1,V2,...
  std::string target;               // --target time=R
  std::string out;                  // trace: file; sweep: prefix of .csv, .json, .svg
  int64_t step = 0;                 // trace --step
  bool step_given = false;
};

int WhatIfCommand(JobService::Stub& stub, const std::string& job_id,
                  const CostCommandOptions& options);
int TraceCommand(JobService::Stub& stub, const std::string& job_id,
                 const CostCommandOptions& options);
int SweepCommand(JobService::Stub& stub, const std::string& job_id,
                 const CostCommandOptions& options);
// report --format=html --out FILE: the job's page (pages/job_page.h) as one
// self-contained file.
int HtmlReportCommand(JobService::Stub& stub, const std::string& job_id,
                      const CostCommandOptions& options);

// The flags that repeat (taken out of argv before absl parses it) and
// whether --step was given (trace picks a step of its own otherwise).
struct RepeatedFlags {
  std::vector<std::string> sets, grids;
  bool step_given = false;
};
RepeatedFlags& RepeatedCostFlags();

// Takes every "--NAME VALUE" and "--NAME=VALUE" out of `args` (flags that
// repeat, which absl's flags do not), in order.
std::vector<std::string> TakeRepeatedFlag(const std::string& name, int* argc, char** argv);

}  // namespace hpt

#endif  // HPT_HPTCTL_COST_COMMANDS_H_
