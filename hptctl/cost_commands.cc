#include "hptctl/cost_commands.h"

#include <sys/stat.h>

#include <chrono>
#include <iostream>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/output_file.h"
#include "cost/record_costing.h"
#include "devices/gpu/roofline.h"
#include "hptctl/cost_views.h"
#include "hptctl/job_format.h"
#include "hptctl/unary_call.h"
#include "pages/job_page.h"

namespace hpt {
namespace {

int Fail(const absl::Status& status) { return PrintFailure(status); }

bool IsReferenceGpu(absl::string_view key) {
  return key == "reference_gpu" || key == "gpu:reference_gpu";
}

// reference_gpu=FILE in --set: the file is read here, where the user named
// it (ReferenceGpuValue), and travels as the profile's text.
absl::Status ReadProfileFiles(std::vector<std::string>* sets) {
  for (std::string& s : *sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || !IsReferenceGpu(s.substr(0, eq))) continue;
    absl::StatusOr<std::string> value = ReferenceGpuValue(s.substr(eq + 1));
    if (!value.ok()) return value.status();
    s = absl::StrCat(s.substr(0, eq + 1), *value);
  }
  return absl::OkStatus();
}

// The same for a --grid over reference_gpu: each file's text is what is
// costed; its path is what the table shows.
absl::Status ReadProfileFiles(SweepGrid* grid) {
  if (!IsReferenceGpu(grid->key)) return absl::OkStatus();
  for (const std::string& v : grid->values) {
    absl::StatusOr<std::string> value = ReferenceGpuValue(v);
    if (!value.ok()) return value.status();
    grid->costed.push_back(*value);
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkRecord> FetchRecord(JobService::Stub& stub, const std::string& job_id,
                                       const CostCommandOptions& options) {
  GetWorkRecordRequest request;
  request.set_job_id(job_id);
  WorkRecord record;
  absl::Status s =
      UnaryCall(stub, &JobService::Stub::GetWorkRecord, request, &record, options.prepare);
  if (!s.ok()) return s;
  return record;
}

}  // namespace

RepeatedFlags& RepeatedCostFlags() {
  static auto* flags = new RepeatedFlags;
  return *flags;
}

std::vector<std::string> TakeRepeatedFlag(const std::string& name, int* argc, char** argv) {
  std::vector<std::string> values;
  const std::string bare = "--" + name, with = bare + "=";
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {  // the rest is positional
      while (i < *argc) argv[kept++] = argv[i++];
      break;
    }
    if (absl::StartsWith(arg, with)) {
      values.push_back(arg.substr(with.size()));
    } else if (arg == bare && i + 1 < *argc) {
      values.push_back(argv[++i]);
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  return values;
}

int WhatIfCommand(JobService::Stub& stub, const std::string& job_id,
                  const CostCommandOptions& options) {
  if (job_id.empty() || options.sets.empty()) {
    std::cerr << "hptctl: whatif needs a job id and at least one --set KEY=VALUE, e.g. "
                 "hptctl whatif job-000001 --set reference_gpu=h100\n";
    return kExitUsage;
  }
  WhatIfRequest request;
  request.set_job_id(job_id);
  std::vector<std::string> sets = options.sets;
  if (absl::Status s = ReadProfileFiles(&sets); !s.ok()) return Fail(s);
  for (const std::string& s : sets) request.add_settings(s);
  WhatIfResponse response;
  absl::Status s =
      UnaryCall(stub, &JobService::Stub::WhatIf, request, &response, options.prepare);
  if (!s.ok()) return Fail(s);
  if (options.format == "json") {
    std::cout << ToJson(response) << std::endl;
    return kExitOk;
  }
  std::cout << "what if: " << job_id << " re-costed with";
  // The settings as the user gave them (a profile file by its path; the
  // response echoes the request, the file's text).
  for (const std::string& setting : options.sets) std::cout << " " << setting;
  std::cout << " (its recorded work; no training ran)\n";
  for (const std::string& note : response.numerics_notes()) std::cout << "  " << note << "\n";
  // The ratios as run beside the re-costed ones.
  GetJobRequest get;
  get.set_job_id(job_id);
  Job as_run;
  if (UnaryCall(stub, &JobService::Stub::GetJob, get, &as_run, options.prepare).ok()) {
    const bool gpu_changed = absl::c_any_of(options.sets, [](const std::string& set) {
      return absl::StartsWith(set, "reference_gpu=") || absl::StartsWith(set, "gpu_precision=");
    });
    std::cout << "\n" << WhatIfChange(as_run, response.job(), gpu_changed);
  }
  std::cout << "\n" << FormatReport(response.job());
  return kExitOk;
}

int TraceCommand(JobService::Stub& stub, const std::string& job_id,
                 const CostCommandOptions& options) {
  if (job_id.empty()) {
    std::cerr << "hptctl: trace needs a job id, e.g. hptctl trace job-000001 --step=40 "
                 "--format=chrome --out=step40.json\n";
    return kExitUsage;
  }
  absl::StatusOr<WorkRecord> record = FetchRecord(stub, job_id, options);
  if (!record.ok()) return Fail(record.status());
  std::string text;
  if (options.format != "chrome") {
    text = ToJson(*record) + "\n";
  } else {
    std::vector<std::string> sets = options.sets;
    if (absl::Status s = ReadProfileFiles(&sets); !s.ok()) return Fail(s);
    absl::StatusOr<CostSettings> changes = ParseCostSettings(sets);
    if (!changes.ok()) return Fail(changes.status());
    absl::StatusOr<std::unique_ptr<RecordCosting>> costing =
        RecordCosting::Create(&*record, *changes);
    if (!costing.ok()) return Fail(costing.status());
    int64_t step = options.step;
    if (!options.step_given && record->switch_step() >= 0) step = record->switch_step();
    absl::StatusOr<StepTimeline> timeline = (*costing)->Timeline(step);
    if (!timeline.ok()) return Fail(timeline.status());
    text = ChromeTrace(job_id, *timeline);
  }
  if (options.out.empty()) {
    std::cout << text;
    return kExitOk;
  }
  if (absl::Status s = WriteOutputFile(options.out, text); !s.ok()) return Fail(s);
  std::cerr << "wrote " << options.out << "\n";
  return kExitOk;
}

int SweepCommand(JobService::Stub& stub, const std::string& job_id,
                 const CostCommandOptions& options) {
  if (job_id.empty() || options.grids.empty()) {
    std::cerr << "hptctl: sweep needs a job id and at least one --grid KEY=V1,V2,..., e.g. "
                 "hptctl sweep job-000001 --grid reram_chip_tiles=256,1008,4096\n";
    return kExitUsage;
  }
  std::vector<SweepGrid> grids;
  for (const std::string& text : options.grids) {
    absl::StatusOr<SweepGrid> g = ParseGrid(text);
    if (!g.ok()) return Fail(g.status());
    if (absl::Status s = ReadProfileFiles(&*g); !s.ok()) return Fail(s);
    grids.push_back(*g);
  }
  std::vector<std::string> sets = options.sets;
  if (absl::Status s = ReadProfileFiles(&sets); !s.ok()) return Fail(s);
  absl::StatusOr<CostSettings> fixed = ParseCostSettings(sets);
  if (!fixed.ok()) return Fail(fixed.status());
  absl::StatusOr<WorkRecord> record = FetchRecord(stub, job_id, options);
  if (!record.ok()) return Fail(record.status());
  const auto start = std::chrono::steady_clock::now();
  if (!options.target.empty()) {
    absl::StatusOr<std::pair<std::string, double>> target = ParseTarget(options.target);
    if (!target.ok()) return Fail(target.status());
    if (grids.size() != 1) {
      std::cerr << "hptctl: --target searches one setting: give one --grid KEY=LO,...,HI\n";
      return kExitUsage;
    }
    absl::StatusOr<TargetResult> r =
        FindTarget(*record, grids[0], target->first, target->second, *fixed);
    if (!r.ok()) return Fail(r.status());
    std::cout << r->message << "\n";
    return r->reached ? kExitOk : kExitJobFailed;
  }
  absl::StatusOr<std::vector<SweepPoint>> points = Sweep(*record, grids, *fixed);
  if (!points.ok()) return Fail(points.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.format == "json") {
    std::cout << SweepJson(grids, *points);
  } else {
    std::cout << SweepTable(grids, *points);
    std::cerr << absl::StrFormat("%d points re-costed in %.2f s\n", points->size(), seconds);
  }
  if (!options.out.empty()) {
    // --out names a prefix; a folder (or a path ending in '/') gets the
    // files inside it, named for the job.
    std::string prefix = options.out;
    struct stat st;
    if (absl::EndsWith(prefix, "/") || (stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
      prefix = absl::StrCat(absl::StripSuffix(prefix, "/"), "/", job_id, "-sweep");
    }
    const std::string title =
        absl::StrCat(job_id, ": HpT vs GPU-only (", record->preset(), ") against ", grids[0].key);
    for (const auto& [ext, text] :
         std::vector<std::pair<std::string, std::string>>{
             {".csv", SweepCsv(grids, *points)},
             {".json", SweepJson(grids, *points)},
             {".svg", SweepSvg(grids, *points, title)}}) {
      if (absl::Status s = WriteOutputFile(prefix + ext, text); !s.ok()) return Fail(s);
    }
    std::cerr << "wrote " << prefix << ".csv, .json and .svg\n";
  }
  return kExitOk;
}

int HtmlReportCommand(JobService::Stub& stub, const std::string& job_id,
                      const CostCommandOptions& options) {
  if (job_id.empty() || options.out.empty()) {
    std::cerr << "hptctl: report --format=html needs a job id and --out, e.g. hptctl report job-000001 "
                 "--format=html --out report.html"
              << std::endl;
    return kExitUsage;
  }
  JobPageInput input;
  {
    GetJobRequest request;
    request.set_job_id(job_id);
    absl::Status s =
        UnaryCall(stub, &JobService::Stub::GetJob, request, &input.job, options.prepare);
    if (!s.ok()) return Fail(s);
  }
  {
    GetJobHistoryRequest request;
    request.set_job_id(job_id);
    absl::Status s = UnaryCall(stub, &JobService::Stub::GetJobHistory, request, &input.history,
                               options.prepare);
    if (!s.ok()) return Fail(s);
  }
  absl::StatusOr<WorkRecord> record = FetchRecord(stub, job_id, options);
  if (!record.ok() && !absl::IsNotFound(record.status())) return Fail(record.status());
  SetPageTimeline(record.ok() ? &*record : nullptr, &input);
  absl::Status written = WriteOutputFile(options.out, RenderJobPage(input, PageOptions()));
  if (!written.ok()) return Fail(written);
  std::cout << "wrote " << options.out << " (" << input.history.steps() << " steps; open it in a browser, "
            << "no network needed)" << std::endl;
  return kExitOk;
}

}  // namespace hpt
