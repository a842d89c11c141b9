// Shared by the benchmarks: a job's spec for each real data set (the
// paper's splits), and a job run in one process through the trainer with
// real worker executors (LibTorch GPU worker, ReRAM and systolic models).
#ifndef HPT_BENCHMARKS_BENCH_JOBS_H_
#define HPT_BENCHMARKS_BENCH_JOBS_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/trainer.h"
#include "proto/job_service.pb.h"

namespace hpt {

// Sets spec.data for `dataset` (wind, weather, covid, swe) read from `dir`
// (the real data folder), with the paper's split and input window.
absl::Status SetRealData(const std::string& dataset, const std::string& dir, JobSpec* spec);

// `dir` as the user meant it: a relative path under `bazel run` is taken
// from where they ran it.
std::string ResolveDataDir(const std::string& dir);

struct BenchRun {
  Job job;
  double wall_s = 0;
};

// Trains `spec` with hpt.mode `mode` ("full" or "hpt") on CPU; `label`
// prefixes the per-epoch progress lines on stderr. `observe`, if given,
// sees every progress update (after each step, and after each epoch's
// evaluation) as it happens.
absl::StatusOr<BenchRun> RunInProcess(
    const JobSpec& spec, const std::string& mode, const std::string& label, int threads = 0,
    std::function<void(const TrainerUpdate&)> observe = nullptr);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_BENCH_JOBS_H_
