// sweep_bench: record once, cost many, timed. Trains an HpT job of a paper
// preset (default wind: 12 layers, d_model 512, batch 1) in this process
// through a forced switch, then, from its work record:
//  - re-costs it under its own settings and prints the largest relative
//    difference from the report the job printed (want < 1e-9);
//  - a --points sweep (a grid of ReRAM chip tiles x systolic array rows)
//    timed, as a ratio to the job's own training wall time;
//  - HpT against the three GPU baselines.
// Without the real data folder it trains on synthetic stations.
//
//   bazel run -c opt //benchmarks:sweep_bench -- --data_dir=../shared/data
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/bench_jobs.h"
#include "coordinator/spec/job_spec.h"
#include "cost/record_costing.h"
#include "hptctl/cost_views.h"

ABSL_FLAG(std::string, data_dir, "../shared/data", "The real data sets' folder.");
ABSL_FLAG(std::string, preset, "wind", "Model preset (and data set, when real data is there).");
ABSL_FLAG(int, steps, 12, "Training steps (batch 1; the switch is forced after a few).");
ABSL_FLAG(int, points, 100, "Sweep points (a square grid, rounded).");

namespace hpt {
namespace {

double MaxRelative(const CostComparison& a, const CostComparison& b) {
  double worst = 0;
  const auto* d = CostComparison::descriptor();
  const auto* ra = a.GetReflection();
  const auto* rb = b.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE || f->is_repeated()) {
      continue;
    }
    const double x = ra->GetDouble(a, f), y = rb->GetDouble(b, f);
    if (x != y) worst = std::max(worst, std::fabs(x - y) / std::max(std::fabs(x), std::fabs(y)));
  }
  return worst;
}

int Main() {
  const std::string preset = absl::GetFlag(FLAGS_preset);
  JobSpec spec;
  spec.mutable_model()->set_preset(preset);
  spec.mutable_training()->set_epochs(1);
  spec.mutable_training()->set_batch_size(1);
  spec.mutable_training()->set_max_steps_per_epoch(absl::GetFlag(FLAGS_steps));
  spec.mutable_training()->set_max_test_samples(1);
  ForceEarlySwitch(spec.mutable_hpt());
  const std::string dir = ResolveDataDir(absl::GetFlag(FLAGS_data_dir));
  std::string data = "synthetic (16 stations)";
  if (std::filesystem::exists(dir) && SetRealData(preset, dir, &spec).ok()) {
    data = "real (" + dir + ")";
  } else {
    spec.mutable_data()->mutable_synthetic()->set_stations(16);
    spec.mutable_data()->mutable_synthetic()->set_time_steps(400);
  }
  std::shared_ptr<const WorkRecord> record;
  absl::StatusOr<BenchRun> run =
      RunInProcess(spec, TrainingMode::hpt, preset, 0, [&](const TrainerUpdate& u) {
        if (u.work_record != nullptr) record = u.work_record;
      });
  if (!run.ok() || record == nullptr) {
    std::fprintf(stderr, "training failed: %s\n", run.status().ToString().c_str());
    return 1;
  }
  std::printf("%s preset HpT job, %s data: %lld steps (switch at %lld) trained in %.1f s; "
              "its record: %d step shapes, %zu bytes\n",
              preset.c_str(), data.c_str(), static_cast<long long>(run->job.progress().step()),
              static_cast<long long>(run->job.hpt().switch_step()), run->wall_s,
              record->shapes_size(), record->ByteSizeLong());

  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<JobCosts> same = CostOfRecord(*record, {});
  const double one_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!same.ok()) return 1;
  std::printf("re-cost under its own settings: %.3f ms, largest relative difference from the "
              "job's report %.3g\n",
              one_s * 1e3, MaxRelative(same->comparison, run->job.hpt().comparison()));

  const int side = std::max(1, int(std::lround(std::sqrt(absl::GetFlag(FLAGS_points)))));
  SweepGrid tiles{"reram_chip_tiles", {}, {}}, rows{"systolic_rows", {}, {}};
  for (int i = 0; i < side; ++i) {
    // Chip tiles 512 .. 65536 doubling, then 8192 (i + 1) beyond.
    tiles.values.push_back(std::to_string(i < 8 ? 512 << i : 8192 * (i + 1)));
    rows.values.push_back(std::to_string(16 * (i + 1)));
  }
  start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<SweepPoint>> points = Sweep(*record, {tiles, rows}, {});
  const double sweep_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!points.ok()) {
    std::fprintf(stderr, "sweep failed: %s\n", points.status().ToString().c_str());
    return 1;
  }
  double lo = 1e300, hi = 0;
  for (const SweepPoint& p : *points) {
    lo = std::min(lo, p.projected_time_ratio);
    hi = std::max(hi, p.projected_time_ratio);
  }
  std::printf("%zu-point sweep (reram_chip_tiles x systolic_rows): %.2f s, %.1f ms a point; "
              "%.4f of the training wall time (%.0fx faster than training once)\n",
              points->size(), sweep_s, sweep_s / double(points->size()) * 1e3,
              sweep_s / run->wall_s, run->wall_s / sweep_s);
  std::printf("projected time ratio over the sweep: %.3fx .. %.3fx\n", lo, hi);
  for (const BaselineComparison& b : same->comparison.baselines()) {
    std::printf("  vs %-6s GPU-only: time %.3fx, energy %.3fx (projected %.3fx, %.3fx)\n",
                b.baseline().c_str(), b.time_ratio(), b.energy_ratio(), b.projected_time_ratio(),
                b.projected_energy_ratio());
  }
  return 0;
}

}  // namespace
}  // namespace hpt

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return hpt::Main();
}
