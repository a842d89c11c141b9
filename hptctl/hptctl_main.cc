// hptctl: submit, list, inspect, watch and cancel HpT training jobs.
//
//   hptctl submit --preset=tiny --epochs=3 --watch
//   hptctl submit --spec=job.textproto
//   hptctl list | status JOB | watch JOB | cancel JOB
//
// Exit codes are stable (hptctl/job_format.h, README.md).
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <tuple>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/grpc_setup.h"
#include "common/net.h"
#include "common/tls_flags.h"
#include "common/grpc_status.h"
#include "google/protobuf/util/json_util.h"
#include "common/tensor_codec.h"
#include "hptctl/job_format.h"
#include "hptctl/model_file.h"
#include "proto/job_service.grpc.pb.h"

ABSL_FLAG(std::string, coordinator, "127.0.0.1:50051", "Coordinator host:port.");
ABSL_FLAG(std::string, format, "text", "Output format: text or json.");
ABSL_FLAG(int, timeout_s, 30, "Deadline of each unary call, seconds.");
ABSL_FLAG(std::string, token_file, "",
          "File holding your bearer token for a coordinator started with --tokens_file "
          "(default: $HPT_TOKEN_FILE).");
// submit
ABSL_FLAG(std::string, spec, "", "submit: job spec file (protobuf text format).");
ABSL_FLAG(std::string, name, "", "submit: job name.");
ABSL_FLAG(std::string, preset, "", "submit: model preset (tiny, swe, weather, covid, wind).");
ABSL_FLAG(int, epochs, 0, "submit: epochs (0: spec or default 3).");
ABSL_FLAG(int, batch_size, 0, "submit: batch size (0: spec or default 16).");
ABSL_FLAG(double, lr, 0, "submit: learning rate (0: spec or default 1e-3).");
ABSL_FLAG(std::string, optimizer, "", "submit: adam or adamw.");
ABSL_FLAG(int, step_lr_step_size, 0, "submit: StepLR epochs per decay (0: constant).");
ABSL_FLAG(int, gpu_workers, 0, "submit: data-parallel GPU workers (0: 1).");
ABSL_FLAG(std::string, head_device, "",
          "submit: where the output head runs: gpu, reram or systolic.");
ABSL_FLAG(int, max_steps_per_epoch, 0, "submit: cap on steps per epoch.");
ABSL_FLAG(int, checkpoint_every, 0,
          "submit: a checkpoint every N steps (0: 100; -1: only at the phase switch).");
ABSL_FLAG(int64_t, step, 0, "resume: the checkpoint's step (0: the newest).");
ABSL_FLAG(uint64_t, seed, 0, "submit: training seed.");
ABSL_FLAG(std::string, csv, "", "submit: wide CSV file, read by the coordinator.");
ABSL_FLAG(std::string, train_rows, "",
          "submit: CSV training rows BEGIN:END[,BEGIN:END...] (e.g. 0:480,2120:8387).");
ABSL_FLAG(std::string, test_rows, "", "submit: CSV test rows BEGIN:END.");
ABSL_FLAG(int, input_steps, 0,
          "submit: input steps per sample (the time steps a token's features span).");
ABSL_FLAG(int, window, 0, "submit: the old name of --input_steps.");
ABSL_FLAG(int, horizon, 0, "submit: steps ahead to predict.");
ABSL_FLAG(int, stations, 0, "submit: synthetic stations.");
ABSL_FLAG(int, time_steps, 0, "submit: synthetic time steps.");
ABSL_FLAG(std::string, request_id, "", "submit: idempotency key.");
ABSL_FLAG(bool, watch, false, "submit: watch the job to its end.");
ABSL_FLAG(std::string, mode, "", "submit: hpt (default: switch to LoRA) or full.");
ABSL_FLAG(std::string, placement, "",
          "submit: LoRA-phase placement: paper (default), gpu or reram_full.");
ABSL_FLAG(int64_t, check_window_samples, 0,
          "submit: phase-controller check window k in samples, the paper's unit (0: the "
          "preset's: swe 365, covid 720, wind 480, weather 8000).");
ABSL_FLAG(int64_t, check_window_steps, 0, "submit: the check window in steps instead.");
ABSL_FLAG(int64_t, hpt_window, 0, "submit: the old name of --check_window_samples.");
ABSL_FLAG(int64_t, hpt_window_steps, 0, "submit: the old name of --check_window_steps.");
ABSL_FLAG(double, project_epochs, 0,
          "submit: training length the report projects HpT and GPU-only to (0: the "
          "paper's epochs for the preset).");
ABSL_FLAG(double, loss_threshold, 0, "submit: loss-test threshold (0: 0.1).");
ABSL_FLAG(double, weight_threshold, 0, "submit: weight-test threshold (0: 0.01).");
ABSL_FLAG(double, alpha, 0, "submit: t-test significance (0: 0.01).");
ABSL_FLAG(int, weight_layer, -1,
          "submit: layer whose [W_q | W_v] the weight test tracks (-1: the preset's, the "
          "paper's: last for swe and weather, 0 otherwise).");
ABSL_FLAG(std::string, lora_rank, "", "submit: LoRA rank, or auto (default 8).");
ABSL_FLAG(double, lora_alpha, 0, "submit: LoRA alpha (0: 64).");
ABSL_FLAG(int64_t, reram_chip_tiles, 0,
          "submit: tiles of each ReRAM worker's chip; free ones hold copies of "
          "the frozen layers (0: ISAAC's 1008).");
ABSL_FLAG(std::string, weather_dir, "",
          "submit: AgWeatherNet station files (AWN_*.csv), read by the coordinator.");
ABSL_FLAG(int, test_year, 0, "submit: weather test year (0: 2020).");
ABSL_FLAG(std::string, covid_csv, "", "submit: county weekly COVID-19 CSV.");
ABSL_FLAG(std::string, swe_stations, "",
          "submit: SNOTEL station table (location, elevation, slope, aspect, land "
          "cover); the SWE series over them are synthetic.");
ABSL_FLAG(int, swe_days, 0, "submit: days of synthetic SWE (0: 1095, three water years).");
ABSL_FLAG(int, counties, 0, "submit: covid counties as tokens (0: 50).");
ABSL_FLAG(std::string, target, "", "submit: weather/covid column to forecast.");
ABSL_FLAG(std::string, out, "", "export: output file (LibTorch, torch::load-able).");

namespace hpt {
namespace {

// A flag renamed in place (--window -> --input_steps, --hpt_window ->
// --check_window_samples, --hpt_window_steps -> --check_window_steps): the
// new name wins, the old one still works.
template <typename T>
T NewOrOld(T now, T old) {
  return now != 0 ? now : old;
}

constexpr char kUsage[] =
    "hptctl COMMAND [flags]\n"
    "commands:\n"
    "  submit   submit a job from --spec and/or flags (--watch to follow it)\n"
    "  list     list jobs\n"
    "  status   JOB: show a job\n"
    "  watch    JOB: follow a job to its end with a progress bar\n"
    "  cancel   JOB: cancel a job\n"
    "  report   JOB: phases, switch decision, costs, HpT vs GPU-only, metrics\n"
    "  export   JOB --out FILE: the trained model (LoRA merged) for torch::load\n"
    "  checkpoints JOB: the job's checkpoints\n"
    "  resume   JOB [--step=N]: queue a failed or cancelled job again from its newest\n"
    "           checkpoint (or the one at step N)\n"
    "exit codes: 0 ok, 1 job failed/cancelled, 2 usage, 3 invalid or refused request,\n"
    "            4 not found, 5 coordinator unreachable, 6 other error";

int Fail(const absl::Status& status) {
  std::cerr << "hptctl: " << absl::StatusCodeToString(status.code()) << ": "
            << status.message() << std::endl;
  if (status.code() == absl::StatusCode::kUnavailable) {
    std::cerr << "hptctl: is the coordinator running at "
              << absl::GetFlag(FLAGS_coordinator)
              << "? (start it with ./hpt up, or set --coordinator)" << std::endl;
  }
  return ExitCodeFor(status);
}

int Usage(const std::string& problem) {
  std::cerr << "hptctl: " << problem << "\n" << kUsage << std::endl;
  return kExitUsage;
}

bool Json() { return absl::GetFlag(FLAGS_format) == "json"; }

std::string& Token() {
  static std::string token;
  return token;
}

// Every call carries the user's token, when there is one.
void Authorize(grpc::ClientContext* context) {
  if (!Token().empty()) context->AddMetadata("authorization", "Bearer " + Token());
}

void SetDeadline(grpc::ClientContext* context) {
  Authorize(context);
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(absl::GetFlag(FLAGS_timeout_s)));
}

// One unary call with the token and the deadline.
template <typename Method, typename Request, typename Response>
absl::Status Call(JobService::Stub& stub, Method method, const Request& request,
                  Response* response) {
  grpc::ClientContext context;
  SetDeadline(&context);
  return FromGrpcStatus((stub.*method)(&context, request, response));
}

// Whether any job flag (one that fills a spec) was given.
bool AnyJobFlag() {
  return !absl::GetFlag(FLAGS_name).empty() || !absl::GetFlag(FLAGS_preset).empty() ||
         absl::GetFlag(FLAGS_epochs) || absl::GetFlag(FLAGS_batch_size) ||
         absl::GetFlag(FLAGS_lr) || !absl::GetFlag(FLAGS_optimizer).empty() ||
         absl::GetFlag(FLAGS_step_lr_step_size) || absl::GetFlag(FLAGS_gpu_workers) ||
         !absl::GetFlag(FLAGS_head_device).empty() ||
         absl::GetFlag(FLAGS_max_steps_per_epoch) || absl::GetFlag(FLAGS_seed) ||
         absl::GetFlag(FLAGS_checkpoint_every) ||
         !absl::GetFlag(FLAGS_csv).empty() || absl::GetFlag(FLAGS_window) ||
         absl::GetFlag(FLAGS_input_steps) || absl::GetFlag(FLAGS_check_window_samples) ||
         absl::GetFlag(FLAGS_check_window_steps) ||
         !absl::GetFlag(FLAGS_weather_dir).empty() ||
         !absl::GetFlag(FLAGS_covid_csv).empty() ||
         !absl::GetFlag(FLAGS_swe_stations).empty() || absl::GetFlag(FLAGS_swe_days) ||
         absl::GetFlag(FLAGS_horizon) || absl::GetFlag(FLAGS_stations) ||
         absl::GetFlag(FLAGS_time_steps) || !absl::GetFlag(FLAGS_mode).empty() ||
         !absl::GetFlag(FLAGS_placement).empty() || absl::GetFlag(FLAGS_hpt_window) ||
         absl::GetFlag(FLAGS_hpt_window_steps) || absl::GetFlag(FLAGS_project_epochs) ||
         absl::GetFlag(FLAGS_loss_threshold) || absl::GetFlag(FLAGS_weight_threshold) ||
         absl::GetFlag(FLAGS_alpha) || absl::GetFlag(FLAGS_weight_layer) >= 0 ||
         !absl::GetFlag(FLAGS_lora_rank).empty() || absl::GetFlag(FLAGS_lora_alpha);

}

// The training section of a submitted spec from the flags.
absl::Status TrainingFromFlags(TrainingSpec& t) {
  t.set_epochs(absl::GetFlag(FLAGS_epochs));
  t.set_batch_size(absl::GetFlag(FLAGS_batch_size));
  t.mutable_optimizer()->set_learning_rate(absl::GetFlag(FLAGS_lr));
  const std::string optimizer = absl::GetFlag(FLAGS_optimizer);
  if (optimizer == "adamw") {
    t.mutable_optimizer()->set_type(ADAMW);
  } else if (optimizer == "adam") {
    t.mutable_optimizer()->set_type(ADAM);
  } else if (!optimizer.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--optimizer '", optimizer, "' is not adam or adamw"));
  }
  t.set_step_lr_step_size(absl::GetFlag(FLAGS_step_lr_step_size));
  t.set_max_steps_per_epoch(absl::GetFlag(FLAGS_max_steps_per_epoch));
  if (absl::GetFlag(FLAGS_checkpoint_every) != 0) {
    t.set_checkpoint_every(absl::GetFlag(FLAGS_checkpoint_every));
  }
  t.set_seed(absl::GetFlag(FLAGS_seed));
  return absl::OkStatus();
}

// The data section: one source (--csv, --weather_dir, --swe_stations,
// --covid_csv, or the synthetic series' --stations/--time_steps).
absl::Status DataFromFlags(DataSpec& d) {
  d.set_input_steps(NewOrOld(absl::GetFlag(FLAGS_input_steps), absl::GetFlag(FLAGS_window)));
  d.set_horizon(absl::GetFlag(FLAGS_horizon));
  if (!absl::GetFlag(FLAGS_csv).empty()) {
    CsvData& csv = *d.mutable_csv();
    csv.set_path(absl::GetFlag(FLAGS_csv));
    int64_t b = 0, e = 0;
    if (!absl::GetFlag(FLAGS_train_rows).empty()) {
      bool first = true;
      for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_train_rows), ',')) {
        absl::Status s = ParseRows("train_rows", std::string(part), &b, &e);
        if (!s.ok()) return s;
        if (first) {
          csv.set_train_begin_row(b);
          csv.set_train_end_row(e);
          first = false;
        } else {
          RowSpan& more = *csv.add_more_train_rows();
          more.set_begin(b);
          more.set_end(e);
        }
      }
    }
    if (!absl::GetFlag(FLAGS_test_rows).empty()) {
      absl::Status s = ParseRows("test_rows", absl::GetFlag(FLAGS_test_rows), &b, &e);
      if (!s.ok()) return s;
      csv.set_test_begin_row(b);
      csv.set_test_end_row(e);
    }
  } else if (!absl::GetFlag(FLAGS_weather_dir).empty()) {
    d.mutable_weather()->set_dir(absl::GetFlag(FLAGS_weather_dir));
    d.mutable_weather()->set_target(absl::GetFlag(FLAGS_target));
    d.mutable_weather()->set_test_year(absl::GetFlag(FLAGS_test_year));
  } else if (!absl::GetFlag(FLAGS_swe_stations).empty()) {
    d.mutable_swe()->set_stations_csv(absl::GetFlag(FLAGS_swe_stations));
    d.mutable_swe()->set_days(absl::GetFlag(FLAGS_swe_days));
  } else if (!absl::GetFlag(FLAGS_covid_csv).empty()) {
    d.mutable_covid()->set_path(absl::GetFlag(FLAGS_covid_csv));
    d.mutable_covid()->set_target(absl::GetFlag(FLAGS_target));
    d.mutable_covid()->set_counties(absl::GetFlag(FLAGS_counties));
  } else if (absl::GetFlag(FLAGS_stations) || absl::GetFlag(FLAGS_time_steps)) {
    d.mutable_synthetic()->set_stations(absl::GetFlag(FLAGS_stations));
    d.mutable_synthetic()->set_time_steps(absl::GetFlag(FLAGS_time_steps));
  }
  return absl::OkStatus();
}

// The HpT section: the method, its check window and thresholds, LoRA.
absl::Status HptFromFlags(HptSpec& h) {
  h.set_mode(absl::GetFlag(FLAGS_mode));
  h.set_placement(absl::GetFlag(FLAGS_placement));
  h.set_check_window_samples(
      NewOrOld(absl::GetFlag(FLAGS_check_window_samples), absl::GetFlag(FLAGS_hpt_window)));
  h.set_check_window_steps(
      NewOrOld(absl::GetFlag(FLAGS_check_window_steps), absl::GetFlag(FLAGS_hpt_window_steps)));
  h.set_project_epochs(absl::GetFlag(FLAGS_project_epochs));
  h.set_loss_threshold(absl::GetFlag(FLAGS_loss_threshold));
  h.set_weight_threshold(absl::GetFlag(FLAGS_weight_threshold));
  h.set_alpha(absl::GetFlag(FLAGS_alpha));
  if (absl::GetFlag(FLAGS_weight_layer) >= 0) {
    h.set_weight_layer(absl::GetFlag(FLAGS_weight_layer));
    h.set_weight_layer_set(true);
  }
  h.mutable_lora()->set_alpha(absl::GetFlag(FLAGS_lora_alpha));
  h.set_reram_chip_tiles(absl::GetFlag(FLAGS_reram_chip_tiles));
  const std::string rank = absl::GetFlag(FLAGS_lora_rank);
  int parsed_rank = 0;
  if (rank == "auto") {
    h.mutable_lora()->set_auto_rank(true);
  } else if (!rank.empty()) {
    if (!absl::SimpleAtoi(rank, &parsed_rank) || parsed_rank < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--lora_rank '", rank, "' is not a positive integer or auto"));
    }
    h.mutable_lora()->set_rank(parsed_rank);
  }
  return absl::OkStatus();
}

// Builds the request from --spec and flags (flags override the file).
absl::StatusOr<SubmitJobRequest> BuildSubmit() {
  SubmitJobRequest request;
  JobSpec& spec = *request.mutable_spec();
  if (!absl::GetFlag(FLAGS_spec).empty()) {
    std::ifstream in(absl::GetFlag(FLAGS_spec));
    if (!in) {
      return absl::InvalidArgumentError(
          absl::StrCat("--spec: cannot read '", absl::GetFlag(FLAGS_spec), "'"));
    }
    std::stringstream text;
    text << in.rdbuf();
    // The coordinator parses the text, so errors name its lines. (`spec`
    // stays valid: the flags below fill it, and it is dropped at the end.)
    request.set_spec_text(text.str());
  }
  if (!request.spec_text().empty() && AnyJobFlag()) {
    return absl::InvalidArgumentError(
        "give either --spec or job flags such as --epochs, not both");
  }
  if (!absl::GetFlag(FLAGS_name).empty()) spec.set_name(absl::GetFlag(FLAGS_name));
  if (!absl::GetFlag(FLAGS_preset).empty()) {
    spec.mutable_model()->set_preset(absl::GetFlag(FLAGS_preset));
  }
  if (absl::Status st = TrainingFromFlags(*spec.mutable_training()); !st.ok()) return st;
  spec.mutable_placement()->set_gpu_workers(absl::GetFlag(FLAGS_gpu_workers));
  spec.mutable_placement()->set_head_device(absl::GetFlag(FLAGS_head_device));
  if (absl::Status st = DataFromFlags(*spec.mutable_data()); !st.ok()) return st;
  if (absl::Status st = HptFromFlags(*spec.mutable_hpt()); !st.ok()) return st;
  if (!request.spec_text().empty()) request.clear_spec();
  request.set_request_id(absl::GetFlag(FLAGS_request_id));
  return request;
}

int Watch(JobService::Stub& stub, const std::string& job_id) {
  grpc::ClientContext context;  // no deadline: a job may train for hours
  Authorize(&context);
  WatchJobRequest request;
  request.set_job_id(job_id);
  auto reader = stub.WatchJob(&context, request);
  const bool tty = isatty(STDOUT_FILENO);
  Job job;
  Job last;
  int64_t last_printed_epoch = -1;
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
    if (tty) {
      std::cout << "\r" << FormatProgress(job, 30) << "\x1b[K" << std::flush;
    } else if (job.progress().epoch() != last_printed_epoch ||
               (job.state() == SUCCEEDED || job.state() == FAILED || job.state() == CANCELLED)) {
      // Logs get one line per epoch, not one per step.
      last_printed_epoch = job.progress().epoch();
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
  }
  return absl::GetFlag(FLAGS_watch) ? Watch(stub, job.job_id()) : kExitOk;
}

// hptctl list.
int ListCommand(JobService::Stub& stub) {
  ListJobsResponse response;
  absl::Status s = Call(stub, &JobService::Stub::ListJobs, ListJobsRequest(), &response);
  if (!s.ok()) return Fail(s);
  if (Json()) {
    std::cout << ToJson(response) << std::endl;
  } else if (response.jobs().empty()) {
    std::cout << "no jobs" << std::endl;
  } else {
    for (const Job& job : response.jobs()) std::cout << FormatRow(job) << "\n";
  }
  if (!Json() && response.omitted() > 0) {
    std::cout << response.omitted() << " older job(s) left out to keep the reply under 4 MiB"
              << " (hptctl status JOB shows one)" << std::endl;
  }
  return kExitOk;
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

// hptctl export JOB --out FILE: the trained model for torch::load.
int ExportCommand(JobService::Stub& stub, const std::string& job_id) {
  const std::string out = absl::GetFlag(FLAGS_out);
  if (job_id.empty() || out.empty()) {
    return Usage("export needs a job id and --out, e.g. hptctl export job-000001 --out model.pt");
  }
  grpc::ClientContext context;  // a large model may take a while: no deadline
  Authorize(&context);
  ExportModelRequest request;
  request.set_job_id(job_id);
  auto reader = stub.ExportModel(&context, request);
  ExportModelChunk message;
  ModelConfig config;
  ChunkAssembler assembler;
  while (reader->Read(&message)) {
    if (message.has_model()) config = message.model();
    if (message.has_chunk()) {
      absl::Status added = assembler.Add(message.chunk());
      if (!added.ok()) return Fail(added);
    }
  }
  absl::Status s = FromGrpcStatus(reader->Finish());
  if (!s.ok()) return Fail(s);
  absl::StatusOr<std::map<std::string, HostTensor>> params = assembler.Finish();
  if (!params.ok()) return Fail(params.status());
  s = WriteTorchModel(config, *params, out);
  if (!s.ok()) return Fail(s);
  const std::string config_json = ToJson(config);
  std::ofstream(out + ".json") << config_json << "\n";
  if (Json()) {
    std::cout << config_json << std::endl;
  } else {
    std::cout << "wrote " << out << " (" << params->size() << " tensors, LoRA merged) and "
              << out << ".json (its ModelConfig)\nload it in C++ with:\n"
              << "  hpt::SpatioTemporalTransformer model(config);  // from " << out
              << ".json\n  torch::load(model, \"" << out << "\");" << std::endl;
  }
  return kExitOk;
}

int Run(const std::vector<char*>& args) {
  if (args.size() < 2) return Usage("no command given");
  const std::string command = args[1];
  // gRPC would dial port 99999 as 34463: a bad address is a usage error.
  if (absl::StatusOr<HostPort> address =
          ParseHostPort(absl::GetFlag(FLAGS_coordinator), "--coordinator");
      !address.ok()) {
    return Usage(std::string(address.status().message()));
  }
  auto stub = JobService::NewStub(MakeChannel(absl::GetFlag(FLAGS_coordinator)));
  auto need_job = [&]() -> std::string {
    return args.size() >= 3 ? std::string(args[2]) : std::string();
  };

  if (command == "submit") return SubmitCommand(*stub);
  if (command == "list") return ListCommand(*stub);
  if (command == "status" || command == "watch" || command == "cancel") {
    const std::string job_id = need_job();
    if (job_id.empty()) return Usage(command + " needs a job id, e.g. hptctl " + command + " job-000001");
    if (command == "watch") return Watch(*stub, job_id);
    Job job;
    absl::Status s;
    if (command == "status") {
      GetJobRequest request;
      request.set_job_id(job_id);
      s = Call(*stub, &JobService::Stub::GetJob, request, &job);
    } else {
      CancelJobRequest request;
      request.set_job_id(job_id);
      s = Call(*stub, &JobService::Stub::CancelJob, request, &job);
    }
    if (!s.ok()) return Fail(s);
    std::cout << (Json() ? ToJson(job) + "\n" : FormatSummary(job));
    return kExitOk;
  }
  if (command == "checkpoints") {
    const std::string job_id = need_job();
    if (job_id.empty()) return Usage("checkpoints needs a job id, e.g. hptctl checkpoints job-000001");
    ListCheckpointsRequest request;
    request.set_job_id(job_id);
    ListCheckpointsResponse response;
    absl::Status s = Call(*stub, &JobService::Stub::ListCheckpoints, request, &response);
    if (!s.ok()) return Fail(s);
    std::cout << (Json() ? ToJson(response) + "\n"
                         : FormatCheckpoints(job_id, {response.checkpoints().begin(),
                                                      response.checkpoints().end()}));
    return kExitOk;
  }
  if (command == "resume") {
    const std::string job_id = need_job();
    if (job_id.empty()) return Usage("resume needs a job id, e.g. hptctl resume job-000001");
    ResumeJobRequest request;
    request.set_job_id(job_id);
    request.set_step(absl::GetFlag(FLAGS_step));
    Job job;
    absl::Status s = Call(*stub, &JobService::Stub::ResumeJob, request, &job);
    if (!s.ok()) return Fail(s);
    if (Json()) {
      std::cout << ToJson(job) << std::endl;
    } else {
      const int64_t from = job.recoveries_size() > 0
                               ? job.recoveries(job.recoveries_size() - 1).from_step()
                               : 0;
      std::cout << "resumed " << job.job_id() << " from step " << from << std::endl;
    }
    return absl::GetFlag(FLAGS_watch) ? Watch(*stub, job.job_id()) : kExitOk;
  }
  if (command == "report") return ReportCommand(*stub, need_job());
  if (command == "export") return ExportCommand(*stub, need_job());
  return Usage("unknown command '" + command + "'");
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(hpt::kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (absl::Status s = hpt::ApplyTlsFlags(/*require_client_certs=*/false); !s.ok()) {
    return hpt::Usage(std::string(s.message()));
  }
  std::string token_file = absl::GetFlag(FLAGS_token_file);
  if (token_file.empty() && std::getenv("HPT_TOKEN_FILE") != nullptr) {
    token_file = std::getenv("HPT_TOKEN_FILE");
  }
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::string token;
    if (!in || !std::getline(in, token) || token.empty()) {
      return hpt::Usage("--token_file: cannot read a token from " + token_file);
    }
    hpt::Token() = token;
  }
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "text" && format != "json") {
    return hpt::Usage("--format must be text or json, got '" + format + "'");
  }
  return hpt::Run(args);
}
