#include "cost/record_costing.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/cost_phase.h"
#include "common/cost_util.h"
#include "common/device_kind.h"
#include "common/gpu_baseline.h"
#include "cost/baseline_rows.h"
#include "cost/cost_comparison.h"

namespace hpt {
namespace {

bool IsCoordinatorKey(const std::string& key) {
  for (const CostSettingInfo& k : CoordinatorCostSettings()) {
    if (k.key == key) return true;
  }
  return false;
}

bool IsReramLayoutKey(const std::string& key) {
  return key == "reram_chip_tiles" || key == "reram_crossbar_rows" ||
         key == "reram_crossbar_cols" || key == "reram_cell_bits" ||
         key == "reram_weight_bits" || key == "reram_sign_mode";
}

// `count` times `part`; counters of the worst case ("max_", "worst_") are
// not multiplied.
void AddTimes(const CostReport& part, double count, CostReport* total) {
  CostReport scaled = part;
  scaled.set_simulated_s(part.simulated_s() * count);
  scaled.set_energy_j(part.energy_j() * count);
  for (auto& [name, value] : *scaled.mutable_counters()) {
    if (name.rfind("max_", 0) != 0 && name.rfind("worst_", 0) != 0) value *= count;
  }
  scaled.clear_work();
  AddCost(scaled, total);
}

}  // namespace

// One shape's cost under one baseline.
struct RecordCosting::ShapeCost {
  std::vector<CostReport> main, trial;  // per task
  StepTotals step;                      // main and trial together
  StepTotals main_only;                 // GPU-only: without the trial
};

RecordCosting::~RecordCosting() = default;

absl::StatusOr<std::pair<std::string, std::string>> ParseCostSetting(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits('=', 1));
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("setting '", text, "' is not KEY=VALUE (e.g. systolic_rows=64)"));
  }
  return std::make_pair(parts[0], parts[1]);
}

absl::StatusOr<CostSettings> ParseCostSettings(const std::vector<std::string>& texts) {
  CostSettings out;
  for (const std::string& text : texts) {
    absl::StatusOr<std::pair<std::string, std::string>> kv = ParseCostSetting(text);
    if (!kv.ok()) return kv.status();
    out.push_back(*std::move(kv));
  }
  return out;
}

absl::StatusOr<InterconnectConfig> LinkFromSettings(
    const std::map<std::string, std::string>& settings) {
  InterconnectConfig link;
  double gb = link.bandwidth_bytes_per_s / 1e9, us = link.latency_s * 1e6,
         pj = link.energy_per_byte_j * 1e12;
  // A bandwidth must be positive; a latency or an energy may be 0.
  for (auto [key, out, zero_ok] : {std::tuple{"interconnect_gb_per_s", &gb, false},
                                   std::tuple{"interconnect_latency_us", &us, true},
                                   std::tuple{"interconnect_pj_per_byte", &pj, true}}) {
    auto it = settings.find(key);
    if (it == settings.end()) continue;
    double v = 0;
    if (!absl::SimpleAtod(it->second, &v) || !std::isfinite(v) || v < 0 || (!zero_ok && v == 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the work record's setting ", key, "='", it->second, "' is not a ",
          zero_ok ? "non-negative" : "positive",
          " number; the coordinator writes numbers there, so the record was edited or damaged: "
          "restore it, or override it: hptctl whatif JOB --set ",
          key, "=N"));
    }
    *out = v;
  }
  link.bandwidth_bytes_per_s = gb * 1e9;
  link.latency_s = us * 1e-6;
  link.energy_per_byte_j = pj * 1e-12;
  return link;
}

absl::StatusOr<std::unique_ptr<RecordCosting>> RecordCosting::Create(
    const WorkRecord* record, const CostSettings& changes) {
  std::unique_ptr<RecordCosting> c(new RecordCosting());
  c->record_ = record;
  if (absl::Status s = c->Configure(changes); !s.ok()) return s;
  return c;
}

absl::Status RecordCosting::Configure(const CostSettings& changes) {
  std::map<std::string, std::string> coordinator(record_->settings().begin(),
                                                 record_->settings().end());
  bool replan = false;
  for (const auto& [scoped, value] : changes) {
    if (absl::Status s = ApplyChange(scoped, value, &coordinator, &replan); !s.ok()) return s;
  }
  absl::StatusOr<InterconnectConfig> link = LinkFromSettings(coordinator);
  if (!link.ok()) return link.status();
  link_ = *link;
  absl::StatusOr<GpuBaseline::Name> baseline = ParseGpuBaseline(coordinator["gpu_baseline"]);
  if (!baseline.ok()) return baseline.status();
  baseline_ = *baseline;
  return replan ? PlanChips(coordinator) : absl::OkStatus();
}

absl::Status RecordCosting::ApplyChange(const std::string& scoped, const std::string& value,
                                        std::map<std::string, std::string>* coordinator,
                                        bool* replan) {
  std::string key = scoped, scope;
  if (size_t colon = scoped.find(':'); colon != std::string::npos) {
    scope = scoped.substr(0, colon);
    key = scoped.substr(colon + 1);
    // "setting tpu:x=1: worker kind 'tpu' is not gpu, reram or systolic"
    absl::StatusOr<DeviceKind::Name> kind =
        ParseDeviceKind(absl::StrCat("setting ", scoped, "=", value, ": worker kind"), scope);
    if (!kind.ok()) return kind.status();
  }
  const CostSettingInfo* setting_info = FindCostSetting(key);
  if (setting_info == nullptr) {
    DeviceCostConfig probe = DefaultDeviceCostConfig(DeviceKind::reram);
    return ApplyDeviceSetting(key, value, &probe);  // the unknown-key error
  }
  if (IsCoordinatorKey(key)) {
    // Check the value as the coordinator would.
    if (key == "gpu_baseline") {
      absl::StatusOr<GpuBaseline::Name> b = ParseGpuBaseline(value);
      if (!b.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("setting ", key, ": ", b.status().message()));
      }
    } else {
      double v = 0;
      if (!absl::SimpleAtod(value, &v) || !(v > 0) ||
          (key == "reram_chip_tiles" && (v != double(int64_t(v)) || v > 1e7))) {
        return absl::InvalidArgumentError(
            absl::StrCat("setting ", key, "='", value, "': want a positive number",
                         key == "reram_chip_tiles" ? " (whole tiles, at most 10000000)" : ""));
      }
    }
    (*coordinator)[key] = value;
  } else {
    DeviceCostConfig probe = DefaultDeviceCostConfig(
        key.rfind("reram_", 0) == 0 || key.rfind("systolic_", 0) == 0 ? DeviceKind::reram
                                                                      : DeviceKind::gpu);
    if (absl::Status s = ApplyDeviceSetting(key, value, &probe); !s.ok()) return s;
    device_settings_.push_back({scoped, value});
  }
  if (setting_info->changes_numerics) {
    numerics_notes_.push_back(
        absl::StrCat(scoped, "=", value, ": cost only: quality needs a re-run"));
  }
  *replan = *replan || IsReramLayoutKey(key);
  return absl::OkStatus();
}

absl::Status RecordCosting::PlanChips(const std::map<std::string, std::string>& coordinator) {
  ReramChipConfig chip;
  auto set = coordinator.find("reram_chip_tiles");
  if (int64_t tiles = 0;
      set != coordinator.end() && absl::SimpleAtoi(set->second, &tiles) && tiles > 0) {
    chip.tiles = tiles;
  }
  for (const RecordedChip& recorded : record_->chips()) {
    int device = -1;
    for (int i = 0; i < record_->devices_size(); ++i) {
      if (record_->devices(i).worker() == recorded.worker()) device = i;
    }
    std::vector<ReramLayerDemand> demand;
    for (const RecordedChip::Layer& l : recorded.layers()) {
      demand.push_back({l.name(), l.k(), l.n(), l.vectors()});
    }
    const ReramConfig reram = device >= 0 ? DeviceConfig(device).reram : ReramConfig();
    absl::StatusOr<std::vector<int64_t>> copies = PlanDuplication(reram, chip, demand);
    if (!copies.ok()) {
      return absl::Status(copies.status().code(),
                          absl::StrCat("reram worker ", recorded.worker(), " under these "
                                       "settings: ", copies.status().message()));
    }
    if (device < 0) continue;
    LayerCopies& layers = copies_[device];
    for (size_t i = 0; i < demand.size(); ++i) layers[demand[i].name] = (*copies)[i];
  }
  return absl::OkStatus();
}

const DeviceCostConfig& RecordCosting::DeviceConfig(int device) {
  auto it = configs_.find(device);
  if (it != configs_.end()) return it->second;
  const RecordedDevice& d = record_->devices(device);
  std::map<std::string, std::string> settings(d.settings().begin(), d.settings().end());
  absl::StatusOr<DeviceCostConfig> config = DeviceCostConfigFrom(d.kind(), settings);
  DeviceCostConfig c = config.ok() ? *config : DefaultDeviceCostConfig(d.kind());
  for (const auto& [scoped, value] : device_settings_) {
    std::string key = scoped;
    if (size_t colon = scoped.find(':'); colon != std::string::npos) {
      if (scoped.substr(0, colon) != KindName(d.kind())) continue;
      key = scoped.substr(colon + 1);
    }
    ApplyDeviceSetting(key, value, &c).IgnoreError();  // checked in Configure
  }
  return configs_.emplace(device, std::move(c)).first->second;
}

CostReport RecordCosting::CostOfTask(const RecordedTask& task, GpuBaseline::Name baseline) {
  auto copies = copies_.find(task.device());
  return CostTaskWork(task.work(), DeviceConfig(task.device()), baseline,
                      copies == copies_.end() ? nullptr : &copies->second, task.type());
}

const RecordCosting::ShapeCost& RecordCosting::CostOfShape(int index, GpuBaseline::Name baseline) {
  auto& slot = shapes_[{index, int(baseline)}];
  if (slot != nullptr) return *slot;
  const StepShape& shape = record_->shapes(index);
  auto cost = std::make_unique<ShapeCost>();
  for (const RecordedTask& t : shape.main()) cost->main.push_back(CostOfTask(t, baseline));
  for (const RecordedTask& t : shape.trial()) cost->trial.push_back(CostOfTask(t, baseline));
  const int ranks = std::max(1, shape.data_parallel_ranks());
  CostTimeline all(link_);
  Lay(shape.main(), cost->main, ranks, &all);
  Lay(shape.trial(), cost->trial, 1, &all);
  cost->step = StepTotals::Of(all);
  if (shape.trial().empty()) {
    cost->main_only = cost->step;
  } else {
    CostTimeline main_only(link_);
    Lay(shape.main(), cost->main, ranks, &main_only);
    cost->main_only = StepTotals::Of(main_only);
  }
  slot = std::move(cost);
  return *slot;
}

JobCosts RecordCosting::Cost() {
  JobCosts out;
  // The devices' totals, and the phases under each baseline.
  std::map<GpuBaseline::Name, RecordedPhases> phases;
  out.devices.resize(record_->devices_size());
  for (int d = 0; d < record_->devices_size(); ++d) {
    const RecordedDevice& rd = record_->devices(d);
    DeviceCost& dc = out.devices[d];
    dc.set_kind(rd.kind());
    dc.set_worker(rd.worker());
    dc.set_device(rd.device());
    dc.set_tasks(rd.tasks());
    dc.mutable_cost()->set_device_kind(rd.kind());
    dc.mutable_cost()->set_measured_s(rd.measured_s());
    dc.mutable_cost()->set_measured_j(rd.measured_j());
  }
  for (GpuBaseline::Name b : AllGpuBaselines()) {
    RecordedPhases& p = phases[b];
    for (int i = 0; i < record_->shapes_size(); ++i) {
      const StepShape& shape = record_->shapes(i);
      const ShapeCost& cost = CostOfShape(i, b);
      p.Add(shape.phase(), double(shape.count()), cost.step, cost.main_only);
      if (b != baseline_) continue;
      for (int t = 0; t < shape.main_size(); ++t) {
        AddTimes(cost.main[t], double(shape.count()),
                 out.devices[shape.main(t).device()].mutable_cost());
      }
      for (int t = 0; t < shape.trial_size(); ++t) {
        AddTimes(cost.trial[t], double(shape.count()),
                 out.devices[shape.trial(t).device()].mutable_cost());
      }
    }
    p.SetMeasured(*record_);
  }
  for (const DeviceCost& d : out.devices) AddCost(d.cost(), &out.total);
  ComparisonInputs in;
  in.steps_per_epoch = record_->steps_per_epoch();
  in.project_epochs = record_->project_epochs();
  in.switch_step = record_->switch_step();
  out.phases = phases[baseline_].Listed();
  out.comparison = Compare(phases[baseline_], in);
  out.comparison.set_baseline(baseline_);
  AddTimeNotes(out.devices, phases[baseline_], &out.comparison);
  for (GpuBaseline::Name b : AllGpuBaselines()) {
    *out.comparison.add_baselines() =
        BaselineRow(GpuBaselineName(b), GpuBaselineSource(b), Compare(phases[b], in));
  }
  AddMeasuredRows(*record_, phases[GpuBaseline::libtorch], in, &out.comparison);
  out.numerics_notes = numerics_notes_;
  return out;
}

void RecordCosting::Lay(const google::protobuf::RepeatedPtrField<RecordedTask>& tasks,
                       const std::vector<CostReport>& costs, int ranks, CostTimeline* timeline,
                       std::vector<LaidPiece>* pieces) const {
  std::vector<LayTask> lay;
  lay.reserve(tasks.size());
  for (int i = 0; i < tasks.size(); ++i) {
    const RecordedTask& t = tasks[i];
    LayTask l;
    l.device = t.device();
    l.track = t.resource().empty() ? record_->devices(t.device()).worker() : t.resource();
    l.kind = record_->devices(t.device()).kind();
    l.type = t.type();
    l.samples = t.samples();
    l.bytes_in = t.bytes_in();
    l.simulated_s = costs[i].simulated_s();
    l.energy_j = costs[i].energy_j();
    lay.push_back(std::move(l));
  }
  LayTasks(lay, ranks, record_->trainable_bytes(), timeline, pieces);
}

absl::StatusOr<StepTimeline> RecordCosting::Timeline(int64_t step) {
  int found = -1;
  int64_t first = -1, last = -1;  // the record's training steps, for the error
  for (int i = 0; i < record_->shapes_size(); ++i) {
    const StepShape& s = record_->shapes(i);
    if (!IsTrainingStep(s.phase())) continue;
    for (int r = 0; r < s.run_first_size(); ++r) {
      if (found < 0 && s.run_first(r) <= step && step <= s.run_last(r)) found = i;
      first = first < 0 ? s.run_first(r) : std::min(first, s.run_first(r));
      last = std::max(last, s.run_last(r));
    }
  }
  if (found < 0) {
    return absl::NotFoundError(
        absl::StrCat("step ", step, " is not in the job's record",
                     first < 0 ? ": it recorded no step"
                               : absl::StrCat(": give one of steps ", first, "-", last)));
  }
  const StepShape& shape = record_->shapes(found);
  const ShapeCost& cost = CostOfShape(found, baseline_);
  StepTimeline out;
  out.step = step;
  out.phase = shape.phase();
  CostTimeline timeline(link_);
  std::vector<LaidPiece> main_pieces, trial_pieces;
  Lay(shape.main(), cost.main, std::max(1, shape.data_parallel_ranks()), &timeline, &main_pieces);
  Lay(shape.trial(), cost.trial, 1, &timeline, &trial_pieces);
  out.makespan_s = timeline.makespan_s();
  out.energy_j = timeline.total_energy_j();
  auto add = [&](const std::vector<LaidPiece>& pieces,
                 const google::protobuf::RepeatedPtrField<RecordedTask>& tasks,
                 const std::vector<CostReport>& costs, const char* chain) {
    for (const LaidPiece& p : pieces) {
      const RecordedTask& t = tasks[p.task];
      LaidTask l;
      l.track = t.resource().empty() ? record_->devices(t.device()).worker() : t.resource();
      l.kind = record_->devices(t.device()).kind();
      l.type = t.type();
      l.chain = chain;
      l.start_s = timeline.start_s(p.id);
      l.finish_s = timeline.finish_s(p.id);
      l.transfer_s = timeline.transfer_s(p.id);
      l.bytes_in = t.bytes_in();
      l.cost = costs[p.task];
      out.tasks.push_back(std::move(l));
    }
  };
  add(main_pieces, shape.main(), cost.main, "main");
  add(trial_pieces, shape.trial(), cost.trial, "trial");
  return out;
}

void ApplyCosts(const JobCosts& costs, Job* job) {
  *job->mutable_cost() = costs.total;
  job->clear_device_costs();
  for (const DeviceCost& d : costs.devices) *job->add_device_costs() = d;
  HptStatus& h = *job->mutable_hpt();
  h.clear_phases();
  for (const PhaseCost& p : costs.phases) *h.add_phases() = p;
  *h.mutable_comparison() = costs.comparison;
}

absl::StatusOr<JobCosts> CostOfRecord(const WorkRecord& record, const CostSettings& changes) {
  absl::StatusOr<std::unique_ptr<RecordCosting>> costing = RecordCosting::Create(&record, changes);
  if (!costing.ok()) return costing.status();
  return (*costing)->Cost();
}

}  // namespace hpt
