// hptctl: submit, list, inspect, watch and cancel HpT training jobs.
//
//   hptctl submit --preset=tiny --epochs=3 --watch
//   hptctl submit --spec=job.textproto
//   hptctl list | status JOB | watch JOB | cancel JOB
//
// Exit codes are stable (hptctl/job_format.h, docs/jobs.md).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>
#include <tuple>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_setup.h"
#include "common/grpc_status.h"
#include "common/net.h"
#include "common/tensor_codec.h"
#include "common/tls_flags.h"
#include "common/training_phase.h"
#include "common/user_file.h"
#include "cost/switch_diagnosis.h"
#include "cost/text_report.h"
#include "google/protobuf/util/json_util.h"
#include "hptctl/call.h"
#include "hptctl/command_line.h"
#include "hptctl/cost_commands.h"
#include "hptctl/job_commands.h"
#include "hptctl/job_format.h"
#include "hptctl/model_commands.h"
#include "hptctl/submit_flags.h"
#include "hptctl/usage.h"
#include "proto/health.grpc.pb.h"
#include "proto/job_service.grpc.pb.h"

ABSL_FLAG(std::string, token_file, "",
          "File holding your bearer token for a coordinator started with --tokens_file "
          "(default: $HPT_TOKEN_FILE).");
// submit
ABSL_FLAG(int64_t, step, 0,
          "resume: the checkpoint's step (0: the newest); trace: the step (default: the "
          "first LoRA-phase step, else 0).");
ABSL_FLAG(bool, watch, false, "submit: watch the job to its end.");
ABSL_FLAG(std::string, target, "",
          "submit: weather/covid column to forecast; sweep: time=R or energy=R, the "
          "projected ratio to reach.");
ABSL_FLAG(std::string, out, "",
          "export: the model file, FILE.pt (TorchScript; FILE.safetensors and FILE.json "
          "beside it); predict: the .npy to write; report --format=html: the page; trace: "
          "output file; sweep: prefix of the .csv, .json and .svg it writes.");
ABSL_FLAG(std::string, input, "",
          "predict: a .npy of inputs [samples, tokens, features], in the data's units.");
ABSL_FLAG(bool, normalised, false,
          "predict: the input and output are in the model's normalised units instead.");

namespace hpt {
namespace {

// A watch whose output is no terminal prints a progress line at least this
// often, besides one per epoch and per phase.
constexpr absl::Duration kLogProgressEvery = absl::Seconds(30);

int Watch(JobService::Stub& stub, const std::string& job_id) {
  grpc::ClientContext context;  // no deadline: a job may train for hours
  Authorize(&context);
  WatchJobRequest request;
  request.set_job_id(job_id);
  if (absl::Status s = CheckRequestText(request); !s.ok()) return Fail(s);
  auto reader = stub.WatchJob(&context, request);
  const bool tty = isatty(STDOUT_FILENO);
  Job job;
  Job last;
  int64_t last_printed_epoch = -1;
  TrainingPhase::Name last_printed_phase = TrainingPhase::TRAINING_PHASE_UNSPECIFIED;
  absl::Time last_printed = absl::InfinitePast();
  std::string waited_for, fallback;
  bool got_any = false;
  while (reader->Read(&job)) {
    got_any = true;
    last = job;
    if (Json()) {
      std::string line;
      google::protobuf::util::JsonPrintOptions o;
      o.preserve_proto_field_names = true;
      (void)google::protobuf::util::MessageToJsonString(job, &line, o);
      std::cout << line << std::endl;
      continue;
    }
    // A wait for workers, and the fallback it may end in, get a line of
    // their own when they begin.
    for (const auto& [now, before, what] :
         {std::tuple{job.waiting_for(), waited_for, "waiting for "},
          std::tuple{job.hpt().fallback_reason(), fallback, "fallback: "}}) {
      if (!now.empty() && now != before) {
        std::cout << (tty ? "\r\x1b[K" : "") << what << now << std::endl;
      }
    }
    waited_for = job.waiting_for();
    fallback = job.hpt().fallback_reason();
    const TrainingPhase::Name phase = job.hpt().phase();
    if (tty) {
      std::cout << "\r" << FormatProgress(job, 30) << "\x1b[K" << std::flush;
    } else if (job.progress().epoch() != last_printed_epoch || phase != last_printed_phase ||
               JobEnded(job.state()) || absl::Now() - last_printed >= kLogProgressEvery) {
      // Logs get a line per epoch, per phase and per kLogProgressEvery,
      // not one per step: a long epoch (the LoRA phase on simulated
      // devices) still shows that it moves.
      if (last_printed_phase != TrainingPhase::TRAINING_PHASE_UNSPECIFIED &&
          phase != last_printed_phase) {
        const std::string why = SwitchWhy(job);
        std::cout << "phase: " << PhaseName(phase) << " (seen at step " << job.progress().step()
                  << ")" << (why.empty() ? "" : "; switched " + why) << std::endl;
      }
      last_printed_epoch = job.progress().epoch();
      last_printed_phase = phase;
      last_printed = absl::Now();
      std::cout << FormatProgress(job, 30) << std::endl;
    }
  }
  absl::Status status = FromGrpcStatus(reader->Finish());
  if (tty && !Json()) std::cout << std::endl;
  if (!status.ok()) return Fail(status);
  if (!got_any) return Fail(absl::InternalError("watch stream ended empty"));
  if (!Json()) std::cout << FormatSummary(last);
  return last.state() == SUCCEEDED ? kExitOk : kExitJobFailed;
}

// hptctl submit: a job from --spec and/or flags; --watch follows it.
int SubmitCommand(JobService::Stub& stub) {
  absl::StatusOr<SubmitJobRequest> request = BuildSubmit();
  if (!request.ok()) {
    // Nothing was sent: the command line is what is wrong.
    std::cerr << "hptctl: " << request.status().message() << std::endl;
    return kExitUsage;
  }
  Job job;
  absl::Status s = Call(stub, &JobService::Stub::SubmitJob, *request, &job);
  if (!s.ok()) return Fail(s);
  if (Json()) {
    std::cout << ToJson(job) << std::endl;
  } else {
    std::cout << "submitted " << job.job_id() << " (" << job.name() << ")"
              << std::endl;
    for (const std::string& note : job.spec().notes()) std::cout << "note: " << note << std::endl;
    if (!job.data().split().empty()) std::cout << "note: data: " << job.data().split() << std::endl;
  }
  return absl::GetFlag(FLAGS_watch) ? Watch(stub, job.job_id()) : kExitOk;
}

// hptctl report JOB: the text report, or its parts of the job as JSON.
int ReportCommand(JobService::Stub& stub, const std::string& job_id) {
  if (job_id.empty()) return Usage("report needs a job id, e.g. hptctl report job-000001");
  GetJobRequest request;
  request.set_job_id(job_id);
  Job job;
  absl::Status s = Call(stub, &JobService::Stub::GetJob, request, &job);
  if (!s.ok()) return Fail(s);
  if (Json()) {
    // The report's parts of the job, for scripts.
    Job report;
    report.set_job_id(job.job_id());
    report.set_name(job.name());
    report.set_state(job.state());
    *report.mutable_progress() = job.progress();
    *report.mutable_test_metrics() = job.test_metrics();
    *report.mutable_hpt() = job.hpt();
    *report.mutable_device_costs() = job.device_costs();
    report.set_error(job.error());
    std::cout << ToJson(report) << std::endl;
  } else {
    std::cout << FormatReport(job);
  }
  return kExitOk;
}

ModelCommandOptions ModelOptions() {
  ModelCommandOptions options;
  options.authorize = [](grpc::ClientContext* context) { Authorize(context); };
  options.prepare = [](grpc::ClientContext* context) { SetDeadline(context); };
  options.json = Json();
  options.out = absl::GetFlag(FLAGS_out);
  options.input = absl::GetFlag(FLAGS_input);
  options.normalised = absl::GetFlag(FLAGS_normalised);
  return options;
}

int CostCommand(JobService::Stub& stub, const std::string& command, const std::string& job_id) {
  CostCommandOptions options;
  options.prepare = [](grpc::ClientContext* context) { SetDeadline(context); };
  options.format = absl::GetFlag(FLAGS_format);
  options.sets = RepeatedCostFlags().sets;
  options.grids = RepeatedCostFlags().grids;
  options.target = absl::GetFlag(FLAGS_target);
  options.out = absl::GetFlag(FLAGS_out);
  options.step = absl::GetFlag(FLAGS_step);
  options.step_given = RepeatedCostFlags().step_given;
  if (command == "whatif") return WhatIfCommand(stub, job_id, options);
  if (command == "report-html") return HtmlReportCommand(stub, job_id, options);
  if (command == "trace") return TraceCommand(stub, job_id, options);
  return SweepCommand(stub, job_id, options);
}

// grpc.health.v1 Check of `service` at --coordinator (any of the
// project's servers): prints the status; exit 0 only when SERVING.
int HealthCommand(const std::string& service, const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  absl::Status s =
      UnaryCall(*stub, &grpc::health::v1::Health::Stub::Check, request, &response, SetDeadline);
  if (!s.ok()) return Fail(s);
  std::cout << service << ": "
            << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())
            << std::endl;
  // The coordinator's warnings about how it serves (a worker has none).
  if (service == JobService::service_full_name()) {
    auto jobs = JobService::NewStub(channel);
    grpc::ClientContext info_context;
    SetDeadline(&info_context);
    ServerInfo info;
    if (jobs->GetServerInfo(&info_context, GetServerInfoRequest(), &info).ok()) {
      for (const std::string& w : info.warnings()) std::cout << "warning: " << w << std::endl;
    }
  }
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk
                                                                             : kExitUnavailable;
}

// status and cancel: the job as the coordinator answers (cancel waits for
// the job to stop).
int StatusCommand(JobService::Stub& stub, const std::string& command, const std::string& job_id) {
  Job job;
  absl::Status s;
  if (command == "status") {
    GetJobRequest request;
    request.set_job_id(job_id);
    s = Call(stub, &JobService::Stub::GetJob, request, &job);
  } else {
    CancelJobRequest request;
    request.set_job_id(job_id);
    s = Call(stub, &JobService::Stub::CancelJob, request, &job);
    if (s.ok()) s = AwaitCancel(stub, &job);
  }
  if (!s.ok()) return Fail(s);
  std::cout << (Json() ? ToJson(job) + "\n" : FormatSummary(job));
  return kExitOk;
}

int CheckpointsCommand(JobService::Stub& stub, const std::string& job_id) {
  ListCheckpointsRequest request;
  request.set_job_id(job_id);
  ListCheckpointsResponse response;
  absl::Status s = Call(stub, &JobService::Stub::ListCheckpoints, request, &response);
  if (!s.ok()) return Fail(s);
  std::cout << (Json() ? ToJson(response) + "\n"
                       : FormatCheckpoints(job_id, {response.checkpoints().begin(),
                                                    response.checkpoints().end()}));
  return kExitOk;
}

int ResumeCommand(JobService::Stub& stub, const std::string& job_id) {
  ResumeJobRequest request;
  request.set_job_id(job_id);
  request.set_step(absl::GetFlag(FLAGS_step));
  Job job;
  absl::Status s = Call(stub, &JobService::Stub::ResumeJob, request, &job);
  if (!s.ok()) return Fail(s);
  if (Json()) {
    std::cout << ToJson(job) << std::endl;
  } else {
    const int64_t from =
        job.recoveries_size() > 0 ? job.recoveries(job.recoveries_size() - 1).from_step() : 0;
    std::cout << "resumed " << job.job_id() << " from step " << from << std::endl;
  }
  return absl::GetFlag(FLAGS_watch) ? Watch(stub, job.job_id()) : kExitOk;
}

// The commands that act on one job and need its id and nothing else, each
// with what runs it.
struct JobCommand {
  const char* name;
  int (*run)(JobService::Stub&, const std::string& job_id);
};
constexpr JobCommand kJobCommands[] = {
    {"status",
     [](JobService::Stub& s, const std::string& id) { return StatusCommand(s, "status", id); }},
    {"cancel",
     [](JobService::Stub& s, const std::string& id) { return StatusCommand(s, "cancel", id); }},
    {"watch", Watch},
    {"checkpoints", CheckpointsCommand},
    {"resume", ResumeCommand},
    {"delete", DeleteCommand},
    {"probe", ProbeCommand},
};

// The job command called `command`, or null.
const JobCommand* FindJobCommand(const std::string& command) {
  for (const JobCommand& c : kJobCommands) {
    if (command == c.name) return &c;
  }
  return nullptr;
}

int Run(const std::vector<char*>& args, const TlsCredentials& tls) {
  if (args.size() < 2) return Usage("no command given");
  const std::string command = args[1];
  // gRPC would dial port 99999 as 34463: a bad address is a usage error.
  if (absl::StatusOr<HostPort> address =
          ParseHostPort(absl::GetFlag(FLAGS_coordinator), "--coordinator");
      !address.ok()) {
    return Usage(std::string(address.status().message()));
  }
  // 0 or less would fail every call as DEADLINE_EXCEEDED, naming nothing.
  if (const int timeout_s = absl::GetFlag(FLAGS_timeout_s); timeout_s < 1) {
    return Usage(absl::StrCat("--timeout_s must be at least 1 (seconds), got ", timeout_s));
  }
  const std::shared_ptr<grpc::Channel> channel =
      MakeChannel(absl::GetFlag(FLAGS_coordinator), tls);
  auto stub = JobService::NewStub(channel);
  const std::string job_id = args.size() >= 3 ? std::string(args[2]) : std::string();

  if (command == "submit") return SubmitCommand(*stub);
  if (command == "list") return ListCommand(*stub);
  if (const JobCommand* c = FindJobCommand(command)) {
    if (job_id.empty()) {
      return Usage(command + " needs a job id, e.g. hptctl " + command + " job-000001");
    }
    return c->run(*stub, job_id);
  }
  if (command == "health")
    return HealthCommand(job_id.empty() ? "hpt.JobService" : job_id, channel);
  if (command == "report") {
    if (absl::GetFlag(FLAGS_format) == "html") return CostCommand(*stub, "report-html", job_id);
    return ReportCommand(*stub, job_id);
  }
  if (command == "whatif" || command == "trace" || command == "sweep") {
    return CostCommand(*stub, command, job_id);
  }
  if (!RepeatedCostFlags().sets.empty() || !RepeatedCostFlags().grids.empty()) {
    return Usage("--set and --grid belong to whatif, sweep and trace");
  }
  if (command == "export") return ExportCommand(*stub, job_id, ModelOptions());
  if (command == "predict") return PredictCommand(*stub, job_id, ModelOptions());
  return Usage("unknown command '" + command + "'");
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(hpt::kUsage);
  bool coordinator_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--step" || arg.rfind("--step=", 0) == 0) hpt::RepeatedCostFlags().step_given = true;
    if (arg == "--coordinator" || arg.rfind("--coordinator=", 0) == 0) coordinator_given = true;
  }
  hpt::RepeatedCostFlags().sets = hpt::TakeRepeatedFlag("set", &argc, argv);
  hpt::RepeatedCostFlags().grids = hpt::TakeRepeatedFlag("grid", &argc, argv);
  if (std::optional<int> exit = hpt::HandleHelpAndUnknownFlags(argc, argv)) return *exit;
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  // The flag wins over the environment, which wins over the default.
  if (const char* env = std::getenv("HPT_COORDINATOR");
      !coordinator_given && env != nullptr && *env != '\0') {
    absl::SetFlag(&FLAGS_coordinator, std::string(absl::StripAsciiWhitespace(env)));
  }
  absl::StatusOr<hpt::TlsCredentials> tls = hpt::TlsFromFlags(/*require_client_certs=*/false);
  if (!tls.ok()) return hpt::Usage(std::string(tls.status().message()));
  std::string token_file = absl::GetFlag(FLAGS_token_file);
  if (token_file.empty() && std::getenv("HPT_TOKEN_FILE") != nullptr) {
    token_file = std::getenv("HPT_TOKEN_FILE");
  }
  if (!token_file.empty()) {
    // A token is one line; 64 KiB is far past any.
    absl::StatusOr<std::string> text = hpt::ReadUserTextFile(token_file, 64 << 10);
    if (!text.ok()) return hpt::Usage(absl::StrCat("--token_file: ", text.status().message()));
    const std::string token(absl::StripAsciiWhitespace(text->substr(0, text->find('\n'))));
    if (token.empty()) return hpt::Usage("--token_file: " + token_file + ": its first line is empty");
    hpt::Token() = token;
  }
  const std::string format = absl::GetFlag(FLAGS_format);
  const std::string command = args.size() >= 2 ? args[1] : "";
  if (format != "text" && format != "json" && !(format == "chrome" && command == "trace") &&
      !(format == "html" && command == "report")) {
    return hpt::Usage("--format must be text or json (chrome for trace, html for report), got '" +
                      format + "'");
  }
  return hpt::Run(args, *tls);
}
