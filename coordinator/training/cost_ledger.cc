#include "coordinator/training/cost_ledger.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "devices/cost_settings.h"
#include "devices/reram/reram_chip.h"

namespace hpt {

CostLedger::CostLedger(const HptSpec& hpt) {
  auto& settings = *recorder_.record().mutable_settings();
  const InterconnectSpec& link = hpt.interconnect();
  const InterconnectConfig defaults;
  settings["interconnect_gb_per_s"] = SettingNumber(
      link.bandwidth_gb_per_s() > 0 ? link.bandwidth_gb_per_s() : defaults.bandwidth_bytes_per_s / 1e9);
  settings["interconnect_latency_us"] = SettingNumber(
      link.latency_us() > 0 ? link.latency_us() : defaults.latency_s * 1e6);
  settings["interconnect_pj_per_byte"] = SettingNumber(
      link.energy_pj_per_byte() > 0 ? link.energy_pj_per_byte() : defaults.energy_per_byte_j * 1e12);
  settings["reram_chip_tiles"] = SettingNumber(
      double(hpt.reram_chip_tiles() > 0 ? hpt.reram_chip_tiles() : ReramChipConfig().tiles));
  settings["gpu_baseline"] = "paper";
}

void CostLedger::Record(FinishedTask record) {
  recorder_.Measure(record);
  dirty_ = true;
  switch (chain_) {
    case Chain::kMain: main_tasks_.push_back(std::move(record)); break;
    case Chain::kTrial: trial_tasks_.push_back(std::move(record)); break;
    case Chain::kSwitch: switch_tasks_.push_back(std::move(record)); break;
    case Chain::kRecovery: recovery_tasks_.push_back(std::move(record)); break;
    case Chain::kNone: off_step_tasks_.push_back(std::move(record)); break;
  }
}

void CostLedger::SetReramChips(const HybridPlan& plan, const std::vector<WorkerClient*>& reram) {
  WorkRecord& r = recorder_.record();
  r.clear_chips();
  for (size_t w = 0; w < plan.chip_demands.size() && w < reram.size(); ++w) {
    RecordedChip* chip = r.add_chips();
    chip->set_worker(reram[w]->address());
    for (const ReramLayerDemand& d : plan.chip_demands[w]) {
      RecordedChip::Layer* l = chip->add_layers();
      l->set_name(d.name);
      l->set_k(d.k);
      l->set_n(d.n);
      l->set_vectors(d.vectors);
    }
  }
  dirty_ = true;
  costing_.reset();  // re-planned copies depend on the chips
}

void CostLedger::CloseStep(int64_t step, CostPhase::Name phase, int data_parallel_ranks,
                           double wall_s) {
  CloseOneOff(CostPhase::off_step, step_, &off_step_tasks_);
  const StepShape* last =
      last_tally_.shape >= 0 ? &recorder_.record().shapes(last_tally_.shape) : nullptr;
  if (like_last_ && main_tasks_.empty() && trial_tasks_.empty() && last != nullptr &&
      last->phase() == phase && last->data_parallel_ranks() == data_parallel_ranks) {
    recorder_.RepeatStep(last_tally_, step, wall_s);
  } else {
    if (like_last_) {  // measured already; recorded with the step's own tasks
      main_tasks_.insert(main_tasks_.begin(), last_main_.begin(), last_main_.end());
      trial_tasks_.insert(trial_tasks_.begin(), last_trial_.begin(), last_trial_.end());
    }
    last_tally_ =
        recorder_.AddStep(phase, main_tasks_, trial_tasks_, data_parallel_ranks, step, wall_s);
    last_main_ = std::move(main_tasks_);
    last_trial_ = std::move(trial_tasks_);
  }
  like_last_ = false;
  CloseOneOff(CostPhase::switch_, step, &switch_tasks_);
  main_tasks_.clear();
  trial_tasks_.clear();
  step_ = step + 1;
  dirty_ = true;
}

void CostLedger::RecordLikeLastStep() {
  for (const FinishedTask& t : last_main_) recorder_.Measure(t);
  for (const FinishedTask& t : last_trial_) recorder_.Measure(t);
  like_last_ = true;
  dirty_ = true;
}

void CostLedger::CloseRecovery(int64_t step) {
  CloseOneOff(CostPhase::recovery, step, &recovery_tasks_);
}

void CostLedger::CloseOneOff(CostPhase::Name phase, int64_t step,
                             std::vector<FinishedTask>* tasks) {
  if (tasks->empty()) return;
  recorder_.AddStep(phase, *tasks, {}, 1, step, 0);
  tasks->clear();
  dirty_ = true;
}

void CostLedger::Refresh() {
  // Work outside steps since the last (an evaluation pass) is one shape.
  CloseOneOff(CostPhase::off_step, step_, &off_step_tasks_);
  if (!dirty_ && costing_ != nullptr) return;
  // A device's settings arrive with its first costed task: cost again
  // from the start when the devices changed.
  std::string devices;
  for (const RecordedDevice& d : record().devices()) {
    absl::StrAppend(&devices, d.worker(), "/", d.settings_size(), ";");
  }
  if (costing_ == nullptr || devices != coster_devices_) {
    absl::StatusOr<std::unique_ptr<RecordCosting>> costing =
        RecordCosting::Create(&recorder_.record(), {});
    if (!costing.ok()) {
      std::fprintf(stderr, "hpt_coordinator: costing the work record: %s\n",
                   costing.status().ToString().c_str());
      return;
    }
    costing_ = std::move(*costing);
    coster_devices_ = devices;
  }
  costs_ = costing_->Cost();
  dirty_ = false;
}

void CostLedger::Compare(double project_epochs, HptStatus* hpt) {
  WorkRecord& r = recorder_.record();
  if (r.project_epochs() != project_epochs || r.switch_step() != hpt->switch_step()) {
    r.set_project_epochs(project_epochs);
    r.set_switch_step(hpt->switch_step());
    dirty_ = true;
  }
  Refresh();
  hpt->clear_phases();
  for (const PhaseCost& p : costs_.phases) *hpt->add_phases() = p;
  *hpt->mutable_comparison() = costs_.comparison;
}

const CostReport& CostLedger::total() {
  Refresh();
  return costs_.total;
}

const std::vector<DeviceCost>& CostLedger::device_costs() {
  Refresh();
  return costs_.devices;
}

void CostLedger::SaveTo(CheckpointHeader* h) const {
  *h->mutable_work_record() = recorder_.record();
}

void CostLedger::RestoreFrom(const CheckpointHeader& h) {
  if (h.has_work_record()) {
    // The job's own coordinator settings stay the record's.
    recorder_.Restore(h.work_record());
  } else {
    std::fprintf(stderr,
                 "hpt_coordinator: the checkpoint of %s at step %lld predates work records: "
                 "its costs so far are not restored\n",
                 h.job_id().c_str(), static_cast<long long>(h.step()));
    recorder_.record().set_trainable_bytes(h.trainable_bytes());
  }
  step_ = h.step();
  last_tally_ = {};  // a restored record's steps are not this ledger's to repeat
  like_last_ = false;
  costing_.reset();
  dirty_ = true;
}

}  // namespace hpt
