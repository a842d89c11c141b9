// The CPU's own calibrated profile against the CPU's own whole training
// steps (forward, MSE backward, Adam update; the tiny and wind presets at
// several batches): every step within 25 % of the
// profile's prediction. The profile comes from microbenchmarks only
// (workers/calibrate/device_calibration.h), never from steps.
//
// A shared machine (a cloud VM) has slow spells of seconds that only ever
// add time. So the check runs in rounds, each a calibration then every
// step, and each side keeps its least over the rounds: the least-disturbed
// calibration's prediction against the least-disturbed measurement. Where
// a step is still outside the tolerance after the rounds asked for, more
// rounds run, up to max_rounds: a least only comes nearer the undisturbed
// figure with more samples, so a slow spell passes while a model that is
// wrong stays wrong.
// Includes LibTorch (benchmarks and their tests only).
//
//   absl::StatusOr<CpuProfileCheck> check = CheckCpuProfile(CpuProfileOptions());
//   for (const StepCheck& s : check->steps) s.ratio();
#ifndef HPT_BENCHMARKS_CPU_PROFILE_H_
#define HPT_BENCHMARKS_CPU_PROFILE_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/recorded_step.h"
#include "devices/gpu/roofline.h"

namespace hpt {

// tiny at batch 4 and 64 (16 tokens), wind at batch 1 and 8 (57 tokens).
std::vector<StepCase> CpuProfileCases();

// One step shape: its measured wall time, task by task, beside the
// profile's prediction of the same tasks.
struct StepCheck {
  StepCase shape;
  StepTimes measured;
  StepTimes predicted;
  double ratio() const { return predicted.total_s() / measured.total_s(); }
  bool within(double tolerance) const { return std::abs(ratio() - 1) <= tolerance; }
};

struct CpuProfileCheck {
  GpuSpec profile;  // the last round's
  std::vector<StepCheck> steps;
  int rounds = 0;  // how many ran
};

struct CpuProfileOptions {
  int rounds = 3;
  int max_rounds = 6;       // while a step is outside the tolerance
  double tolerance = 0.25;  // largest |predicted / measured - 1|
  bool quick = true;  // calibrate quickly (seconds)
  int steps = 7;      // timed samples of each shape a round, the shapes in turn
  std::vector<StepCase> cases = CpuProfileCases();
};

absl::StatusOr<CpuProfileCheck> CheckCpuProfile(const CpuProfileOptions& options);

// `profile`'s prediction of the three tasks of `recorded` (the libtorch
// baseline: C++ eager, per-parameter Adam). Pure arithmetic on the record:
// no timing, the same figures on any machine.
StepTimes PredictStep(const GpuSpec& profile, const RecordedStep& recorded);

// One round: a calibration and every step once (its `rounds` unused).
using CpuProfileRound = std::function<absl::StatusOr<CpuProfileCheck>()>;
// The rounds of a check, each side of each step keeping its least: at
// least options.rounds, then more while a step is outside the tolerance,
// up to options.max_rounds. CheckCpuProfile's loop, apart for its test.
absl::StatusOr<CpuProfileCheck> RunCpuProfileRounds(const CpuProfileOptions& options,
                                                    const CpuProfileRound& round);

}  // namespace hpt

#endif  // HPT_BENCHMARKS_CPU_PROFILE_H_
