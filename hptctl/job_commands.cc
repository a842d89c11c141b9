#include "hptctl/job_commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cost/text_report.h"
#include "hptctl/call.h"
#include "hptctl/job_format.h"
#include "hptctl/unary_call.h"

ABSL_FLAG(bool, yes, false, "delete: do not ask for confirmation.");
ABSL_FLAG(std::string, state, "",
          "list: only jobs in this state (queued, loading, running, succeeded, failed, "
          "cancelled).");
ABSL_DECLARE_FLAG(int32_t, probe_steps);  // submit_flags.cc

namespace hpt {

// After a cancel: a running job stops at its next step boundary, so wait
// (up to 10 s) for its terminal state, and say so if it is not there yet.
absl::Status AwaitCancel(JobService::Stub& stub, Job* job) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  GetJobRequest request;
  request.set_job_id(job->job_id());
  while (job->state() == RUNNING || job->state() == QUEUED || job->state() == LOADING) {
    if (std::chrono::steady_clock::now() > deadline) {
      if (!Json()) {
        std::cout << "cancel requested: " << job->job_id()
                  << " stops at its next step boundary" << std::endl;
      }
      return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (absl::Status s = Call(stub, &JobService::Stub::GetJob, request, job); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// hptctl delete JOB: says what goes with the job, asks (unless --yes),
// then forgets it on the coordinator.
int DeleteCommand(JobService::Stub& stub, const std::string& job_id) {
  GetJobRequest get;
  get.set_job_id(job_id);
  Job job;
  if (absl::Status s = Call(stub, &JobService::Stub::GetJob, get, &job); !s.ok()) return Fail(s);
  ListCheckpointsRequest list;
  list.set_job_id(job_id);
  ListCheckpointsResponse checkpoints;
  Call(stub, &JobService::Stub::ListCheckpoints, list, &checkpoints).IgnoreError();
  const std::string what = absl::StrCat(
      job_id, " (", job.name(), ", ", StateName(job.state()), "): its ",
      checkpoints.checkpoints_size(), " checkpoint(s)",
      job.state() == SUCCEEDED ? ", its trained model" : "", ", its history and work record");
  if (!absl::GetFlag(FLAGS_yes)) {
    if (!isatty(STDIN_FILENO)) {
      std::cerr << "hptctl: delete asks before it deletes " << what
                << "; give --yes where no one can answer" << std::endl;
      return kExitUsage;
    }
    std::cout << "delete " << what << "? type yes: " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "yes" && answer != "y") {
      std::cout << "kept " << job_id << std::endl;
      return kExitOk;
    }
  }
  DeleteJobRequest request;
  request.set_job_id(job_id);
  DeleteJobResponse response;
  if (absl::Status s = Call(stub, &JobService::Stub::DeleteJob, request, &response); !s.ok()) {
    return Fail(s);
  }
  if (Json()) {
    std::cout << ToJson(response) << std::endl;
  } else {
    std::cout << "deleted " << job_id << " (" << response.checkpoints() << " checkpoint file(s)"
              << (response.model() ? ", its model" : "") << ")" << std::endl;
  }
  return kExitOk;
}

// hptctl list [--state=STATE]: newest first.
int ListCommand(JobService::Stub& stub) {
  const std::string state = absl::AsciiStrToUpper(absl::GetFlag(FLAGS_state));
  JobState wanted = JOB_STATE_UNSPECIFIED;
  if (!state.empty() && (!JobState_Parse(state, &wanted) || wanted == JOB_STATE_UNSPECIFIED)) {
    return Usage("--state must be queued, loading, running, succeeded, failed or cancelled, got '" +
                 absl::GetFlag(FLAGS_state) + "'");
  }
  ListJobsResponse response;
  absl::Status s = Call(stub, &JobService::Stub::ListJobs, ListJobsRequest(), &response);
  if (!s.ok()) return Fail(s);
  if (wanted != JOB_STATE_UNSPECIFIED) {
    auto* jobs = response.mutable_jobs();
    jobs->erase(std::remove_if(jobs->begin(), jobs->end(),
                               [&](const Job& j) { return j.state() != wanted; }),
                jobs->end());
  }
  if (Json()) {
    std::cout << ToJson(response) << std::endl;
  } else if (response.jobs().empty()) {
    std::cout << (state.empty() ? "no jobs" : "no " + absl::AsciiStrToLower(state) + " jobs")
              << std::endl;
  } else {
    std::cout << FormatList({response.jobs().begin(), response.jobs().end()});
  }
  if (!Json() && response.omitted() > 0) {
    std::cout << response.omitted() << " older job(s) left out to keep the reply under 4 MiB"
              << " (hptctl status JOB shows one)" << std::endl;
  }
  return kExitOk;
}

// Times a finished job's full-phase step under each GPU baseline on a GPU
// worker and prints HpT against each (the report's baseline tables).
int ProbeCommand(JobService::Stub& stub, const std::string& job_id) {
  ProbeJobBaselinesRequest request;
  request.set_job_id(job_id);
  request.set_steps(absl::GetFlag(FLAGS_probe_steps) > 0 ? absl::GetFlag(FLAGS_probe_steps) : 10);
  // Four baselines' warm-up and timed steps: far longer than a query.
  auto prepare = [](grpc::ClientContext* context) {
    Authorize(context);
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(std::max(absl::GetFlag(FLAGS_timeout_s), 900)));
  };
  std::cerr << "probing " << job_id << "'s full-phase step under each GPU baseline ("
            << request.steps() << " steps each) on a GPU worker..." << std::endl;
  Job job;
  absl::Status s = UnaryCall(stub, &JobService::Stub::ProbeBaselines, request, &job, prepare);
  if (!s.ok()) return Fail(s);
  if (Json()) {
    std::cout << ToJson(job.hpt().comparison()) << std::endl;
  } else {
    std::cout << job.job_id() << ": GPU-only baselines" << FormatBaselines(job.hpt().comparison());
  }
  return kExitOk;
}

}  // namespace hpt
