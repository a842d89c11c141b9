// RecordCosting: a job's costs from its work record (proto/work.proto) under
// the settings it ran with, or under others (docs/cost-model.md, "Record once,
// cost many"). The cost ledger reports a running job with it, and
// `hptctl whatif` / `sweep` / `trace` re-cost finished ones with it: one
// path from work to cost.
//
//   ASSIGN_OR_RETURN(auto costing, RecordCosting::Create(&record, {{"systolic_rows", "64"}}));
//   JobCosts costs = costing->Cost();
//   // costs.comparison.time_ratio(), costs.phases, costs.devices
//
// A setting is KEY=VALUE with the worker flags' names
// (devices/cost_settings.h), applied to every worker that has it, or
// KIND:KEY=VALUE for the workers of one kind (gpu, reram, systolic); the
// coordinator's are reram_chip_tiles, interconnect_gb_per_s,
// interconnect_latency_us, interconnect_pj_per_byte and gpu_baseline.
#ifndef HPT_COST_RECORD_COSTING_H_
#define HPT_COST_RECORD_COSTING_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cost/cost_comparison.h"
#include "cost/cost_timeline.h"
#include "devices/cost_settings.h"
#include "devices/reram/reram_chip.h"
#include "devices/work_cost.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"

namespace hpt {

// Settings to change, in order: (KEY or KIND:KEY, VALUE).
using CostSettings = std::vector<std::pair<std::string, std::string>>;

// Parses "KEY=VALUE" (or "KIND:KEY=VALUE"); INVALID_ARGUMENT naming it.
absl::StatusOr<std::pair<std::string, std::string>> ParseCostSetting(const std::string& text);
// Each of `texts` so; the first bad one's error.
absl::StatusOr<CostSettings> ParseCostSettings(const std::vector<std::string>& texts);

// What a re-cost reports: the job report's cost sections.
struct JobCosts {
  CostReport total;
  std::vector<DeviceCost> devices;
  std::vector<PhaseCost> phases;
  CostComparison comparison;  // with one entry per GPU baseline
  // One line per setting that changes numerics: its cost is shown, its
  // quality needs a re-run.
  std::vector<std::string> numerics_notes;
};

// One task laid on a step's timeline.
struct LaidTask {
  std::string track;  // the device (or its part) it ran on
  DeviceKind::Name kind = DeviceKind::DEVICE_KIND_UNSPECIFIED;
  std::string type;   // load, forward, backward, update
  std::string chain;  // main or trial
  double start_s = 0, finish_s = 0, transfer_s = 0;
  int64_t bytes_in = 0;
  CostReport cost;
};

struct StepTimeline {
  int64_t step = 0;
  CostPhase::Name phase = CostPhase::COST_PHASE_UNSPECIFIED;
  double makespan_s = 0;
  double energy_j = 0;
  std::vector<LaidTask> tasks;
};

class RecordCosting {
 public:
  // `record` must outlive the costing; shapes added to it later are costed
  // when first needed.
  static absl::StatusOr<std::unique_ptr<RecordCosting>> Create(const WorkRecord* record,
                                                              const CostSettings& changes);

  ~RecordCosting();

  // The report's cost sections for the record as it stands.
  JobCosts Cost();
  // Step `step`'s timeline (its shape's); NOT_FOUND for a step the record
  // has not got.
  absl::StatusOr<StepTimeline> Timeline(int64_t step);

  GpuBaseline::Name baseline() const { return baseline_; }
  const InterconnectConfig& link() const { return link_; }

 private:
  struct ShapeCost;
  RecordCosting() = default;
  absl::Status Configure(const CostSettings& changes);
  // Checks one change (`scoped`: key or kind:key) and applies it: to
  // `coordinator` (the record's coordinator settings) or to the devices'
  // settings; sets `replan` when it moves the ReRAM layout.
  absl::Status ApplyChange(const std::string& scoped, const std::string& value,
                           std::map<std::string, std::string>* coordinator, bool* replan);
  // The frozen layers' copies planned again for the chips `coordinator`
  // sets (reram_chip_tiles).
  absl::Status PlanChips(const std::map<std::string, std::string>& coordinator);
  const DeviceCostConfig& DeviceConfig(int device);
  const ShapeCost& CostOfShape(int shape, GpuBaseline::Name baseline);
  CostReport CostOfTask(const RecordedTask& task, GpuBaseline::Name baseline);
  void Lay(const google::protobuf::RepeatedPtrField<RecordedTask>& tasks,
           const std::vector<CostReport>& costs, int ranks, CostTimeline* timeline,
           std::vector<LaidPiece>* pieces = nullptr) const;

  const WorkRecord* record_ = nullptr;
  CostSettings device_settings_;
  InterconnectConfig link_;
  GpuBaseline::Name baseline_ = GpuBaseline::paper;
  std::map<int, DeviceCostConfig> configs_;  // by device index
  // Copies of each ReRAM device's layers after a re-plan (none: recorded).
  std::map<int, LayerCopies> copies_;
  std::map<std::pair<int, int>, std::unique_ptr<ShapeCost>> shapes_;  // (shape, baseline)
  std::vector<std::string> numerics_notes_;
};

// Puts `costs` into `job`'s report: its cost, device costs, phases and
// comparison.
void ApplyCosts(const JobCosts& costs, Job* job);

// The whole path at once.
absl::StatusOr<JobCosts> CostOfRecord(const WorkRecord& record, const CostSettings& changes);

// The interconnect a record's settings describe.
// INVALID_ARGUMENT names a stored value that is not a number in range.
absl::StatusOr<InterconnectConfig> LinkFromSettings(
    const std::map<std::string, std::string>& settings);

}  // namespace hpt

#endif  // HPT_COST_RECORD_COSTING_H_
