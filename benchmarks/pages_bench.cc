// How fast the coordinator serves a job's page as the job grows: a tiny
// HpT job trained in this process (LibTorch GPU worker, ReRAM and systolic
// device models, forced switch) gives a real job, history and work record;
// a copy of it is grown to --steps steps (losses and phase-controller
// checks repeated along the run, as a long job records them). Both pages
// are served by the real PagesServer (cpp-httplib) on loopback and fetched
// over HTTP; the figure is the median of --runs GETs, and the ratio is
// against the job's own page measured in the same run.
//
//   bazel run -c opt //benchmarks:pages_bench -- --steps=100000
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/median_time.h"
#include "coordinator/pages_server.h"
#include "coordinator/spec/job_spec.h"
#include "inprocess/in_process_workers.h"

ABSL_FLAG(int64_t, steps, 100000, "Steps of the grown job.");
ABSL_FLAG(int, runs, 20, "GETs per page; the median is reported.");
ABSL_FLAG(int64_t, check_every, 480,
          "Steps between the grown job's checks (480: wind's k at batch 1; 5: a job that never "
          "switches with the demo's window, 20,000 checks).");

namespace hpt {
namespace {

struct Stored {
  Job job;
  std::shared_ptr<StepHistory> history;
  std::shared_ptr<const WorkRecord> record;
};

class StaticPages : public PageSource {
 public:
  std::vector<Job> List() override {
    std::vector<Job> jobs;
    for (const auto& [id, s] : jobs_) jobs.push_back(s.job);
    return jobs;
  }
  absl::StatusOr<Job> Get(const std::string& id) override { return Find(id).job; }
  absl::StatusOr<JobHistory> History(const std::string& id, int max_points) override {
    return Find(id).history->View(max_points);
  }
  absl::StatusOr<std::shared_ptr<const WorkRecord>> Record(const std::string& id) override {
    return Find(id).record;
  }
  std::map<std::string, Stored> jobs_;

 private:
  const Stored& Find(const std::string& id) { return jobs_.at(id); }
};

// The trained job grown to `steps`: its per-step losses repeated, and a
// check every --check_every steps along the whole run (a real job stops
// checking at its switch, so this is more than one records).
Stored Grow(const Stored& small, int64_t steps) {
  Stored big = small;
  big.job.set_job_id("job-big");
  const LossHistory proto = small.history->ToProto();
  big.history = std::make_shared<StepHistory>();
  for (int64_t s = 0; s < steps; ++s) {
    big.history->AddStep(s, proto.step_losses(int(s % proto.step_losses_size())) * (1 + 0.1 * double(s % 7)));
  }
  for (const EpochPoint& e : proto.epochs()) big.history->AddEpoch(e);
  big.history->SetPredictions(proto.predictions());
  HptStatus* hpt = big.job.mutable_hpt();
  const PhaseEvent check = hpt->events(0);
  const int64_t window = std::max<int64_t>(1, absl::GetFlag(FLAGS_check_every));
  for (int64_t at = hpt->switch_step() + window; at < steps; at += window) {
    PhaseEvent* e = hpt->add_events();
    *e = check;
    e->set_iteration(at);
  }
  big.job.mutable_progress()->set_step(steps);
  big.job.mutable_progress()->set_total_steps(steps);
  return big;
}

int Main() {
  std::unique_ptr<WindowDataset> data = SmallSyntheticWindows(6);
  JobSpec spec;
  spec.mutable_model()->set_preset("tiny");
  spec.mutable_training()->set_epochs(3);
  ForceEarlySwitch(spec.mutable_hpt());
  spec = *NormalizeJobSpec(spec);
  InProcessWorkers workers;
  TrainerUpdate last;
  Trainer::Options options = workers.Options();
  options.on_progress = [&last](const TrainerUpdate& u) { last = u; };
  Trainer trainer("job-small", spec, data.get(), workers.gpus(), options);
  if (absl::Status s = trainer.Run(); !s.ok()) {
    std::fprintf(stderr, "pages_bench: training failed: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  Stored small;
  small.job.set_job_id("job-small");
  small.job.set_state(SUCCEEDED);
  *small.job.mutable_spec() = spec;
  *small.job.mutable_progress() = last.progress;
  *small.job.mutable_cost() = last.cost;
  for (const DeviceCost& d : last.device_costs) *small.job.add_device_costs() = d;
  *small.job.mutable_test_metrics() = last.test_metrics;
  *small.job.mutable_hpt() = last.hpt;
  small.history = last.history;
  small.record = last.work_record;
  StaticPages source;
  source.jobs_["job-small"] = small;
  source.jobs_["job-big"] = Grow(small, absl::GetFlag(FLAGS_steps));

  PagesServer::Options server_options;
  server_options.address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<PagesServer>> server = PagesServer::Start(server_options, &source);
  if (!server.ok()) {
    std::fprintf(stderr, "pages_bench: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  httplib::Client client("127.0.0.1", (*server)->port());
  std::map<std::string, size_t> bytes;
  auto get = [&](const std::string& path) {
    auto result = client.Get(path.c_str());
    if (!result || result->status != 200) {
      std::fprintf(stderr, "pages_bench: GET %s failed\n", path.c_str());
      std::exit(1);
    }
    bytes[path] = result->body.size();
  };
  const int runs = absl::GetFlag(FLAGS_runs);
  const double small_s = MedianSeconds(runs, [&] { get("/jobs/job-small"); });
  const double big_s = MedianSeconds(runs, [&] { get("/jobs/job-big"); });
  const double update_s = MedianSeconds(runs, [&] { get("/jobs/job-big?part=content"); });
  std::printf("job page served over HTTP on loopback, median of %d GETs (grown job: a check every %lld steps):\n",
              runs, static_cast<long long>(absl::GetFlag(FLAGS_check_every)));
  std::printf("  %-34s %9.1f ms  %8zu bytes\n",
              ("job of " + std::to_string(small.history->steps()) + " steps").c_str(), small_s * 1e3,
              bytes["/jobs/job-small"]);
  std::printf("  %-34s %9.1f ms  %8zu bytes  (%.2fx the small job's)\n",
              ("job of " + std::to_string(absl::GetFlag(FLAGS_steps)) + " steps").c_str(), big_s * 1e3,
              bytes["/jobs/job-big"], big_s / small_s);
  std::printf("  %-34s %9.1f ms  %8zu bytes\n", "its live update (?part=content)", update_s * 1e3,
              bytes["/jobs/job-big?part=content"]);
  return 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return hpt::Main();
}
