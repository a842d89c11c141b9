#include "coordinator/cost_ledger.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cost_util.h"

namespace hpt {
namespace {

void AccumulateTimeline(const CostTimeline& t, PhaseCost* phase) {
  phase->set_simulated_s(phase->simulated_s() + t.makespan_s());
  phase->set_energy_j(phase->energy_j() + t.total_energy_j());
  auto& busy = *phase->mutable_device_busy_s();
  auto& energy = *phase->mutable_device_energy_j();
  for (const auto& [kind, s] : t.busy_s()) busy[kind] += s;
  for (const auto& [kind, j] : t.energy_j()) energy[kind] += j;
  if (t.transfer_energy_j() > 0) energy["interconnect"] += t.transfer_energy_j();
}

bool HasCost(const PhaseCost& phase) { return phase.simulated_s() > 0 || phase.energy_j() > 0; }

double EnergyOf(const PhaseCost& phase, const std::string& kind) {
  auto it = phase.device_energy_j().find(kind);
  return it == phase.device_energy_j().end() ? 0 : it->second;
}

}  // namespace

InterconnectConfig LinkOf(const InterconnectSpec& spec) {
  InterconnectConfig link;
  if (spec.bandwidth_gb_per_s() > 0) link.bandwidth_bytes_per_s = spec.bandwidth_gb_per_s() * 1e9;
  link.latency_s = spec.latency_us() * 1e-6;
  link.energy_per_byte_j = spec.energy_pj_per_byte() * 1e-12;
  return link;
}

CostLedger::CostLedger(InterconnectConfig link) : link_(link) {
  full_cost_.set_phase("full");
  switch_cost_.set_phase("switch");
  switch_cost_.set_first_step(-1);
  switch_cost_.set_last_step(-1);
  lora_cost_.set_phase("lora");
  recovery_cost_.set_phase("recovery");
  recovery_cost_.set_first_step(-1);
  recovery_cost_.set_last_step(-1);
  fallback_cost_.set_phase("lora-gpu");
}

void CostLedger::Record(TaskRecord record) {
  AddCost(record.cost, &total_);
  auto [it, inserted] = cost_index_.try_emplace(record.worker, device_costs_.size());
  if (inserted) {
    DeviceCost& d = device_costs_.emplace_back();
    d.set_kind(record.kind);
    d.set_worker(record.worker->address());
  }
  DeviceCost& d = device_costs_[it->second];
  if (d.device().empty()) d.set_device(record.cost.device());
  d.set_tasks(d.tasks() + 1);
  AddCost(record.cost, d.mutable_cost());
  switch (chain_) {
    case Chain::kMain: main_tasks_.push_back(std::move(record)); break;
    case Chain::kTrial: trial_tasks_.push_back(std::move(record)); break;
    case Chain::kSwitch: switch_tasks_.push_back(std::move(record)); break;
    case Chain::kRecovery: recovery_tasks_.push_back(std::move(record)); break;
    case Chain::kNone: break;
  }
}

void CostLedger::LayTasks(const std::vector<TaskRecord>& tasks, int data_parallel_ranks,
                          CostTimeline* timeline) const {
  // `share` of the task (a pipeline piece) on its resource.
  auto add = [&](const TaskRecord& t, const std::vector<int>& deps, int64_t bytes,
                 double share = 1.0) {
    return timeline->Add(t.resource.empty() ? t.worker->address() : t.resource, t.kind,
                         t.cost.simulated_s() * share, t.cost.energy_j() * share, deps,
                         bytes);
  };
  if (data_parallel_ranks > 1) {
    // Ranks run concurrently; every update waits for all backwards and the
    // ring allreduce moves 2 (n - 1) / n of the gradient into each rank.
    const double n = double(data_parallel_ranks);
    const int64_t allreduce = int64_t(2 * (n - 1) / n * double(trainable_bytes_));
    std::map<WorkerClient*, int> forward;
    std::vector<int> backwards;
    for (const TaskRecord& t : tasks) {
      if (t.type == "forward") {
        forward[t.worker] = add(t, {}, t.bytes_in);
      } else if (t.type == "backward") {
        auto it = forward.find(t.worker);
        backwards.push_back(add(t, it == forward.end() ? std::vector<int>{}
                                                        : std::vector<int>{it->second},
                                0));
      } else {
        add(t, backwards, allreduce);
      }
    }
    return;
  }
  const bool pipelined = std::any_of(tasks.begin(), tasks.end(),
                                     [](const TaskRecord& t) { return t.samples > 1; });
  if (pipelined) {
    // Device segments process samples independently (attention mixes
    // tokens, not samples): each task of the chain becomes one piece per
    // sample, piece b after piece b of the task before, so segments on
    // different devices (and ReRAM segments in their own tiles) overlap
    // like a pipeline across the batch (PipeLayer, Song et al., HPCA 2017).
    // A piece costs the task's 1/B. Updates wait for every last piece.
    std::vector<int> previous_pieces, last_backward_pieces;
    for (const TaskRecord& t : tasks) {
      if (t.type == "update") {
        const std::vector<int>& deps =
            last_backward_pieces.empty() ? previous_pieces : last_backward_pieces;
        add(t, deps, 0);
        continue;
      }
      const int64_t pieces = std::max<int64_t>(1, t.samples);
      std::vector<int> ids(pieces);
      for (int64_t b = 0; b < pieces; ++b) {
        std::vector<int> deps;
        if (!previous_pieces.empty()) {
          deps.push_back(previous_pieces[std::min<size_t>(b, previous_pieces.size() - 1)]);
        }
        const double share = 1.0 / double(pieces);
        ids[b] = add(t, deps, int64_t(double(t.bytes_in) * share), share);
      }
      previous_pieces = ids;
      if (t.type == "backward") last_backward_pieces = ids;
    }
    return;
  }
  // A chain: each forward or backward after the one before; updates after
  // the last backward, concurrently on their devices.
  int previous = -1, last_backward = -1;
  for (const TaskRecord& t : tasks) {
    if (t.type == "update") {
      const int dep = last_backward >= 0 ? last_backward : previous;
      add(t, dep >= 0 ? std::vector<int>{dep} : std::vector<int>{}, 0);
      continue;
    }
    previous = add(t, previous >= 0 ? std::vector<int>{previous} : std::vector<int>{},
                   t.bytes_in);
    if (t.type == "backward") last_backward = previous;
  }
}

void CostLedger::CloseStep(int64_t step, bool lora_step, int data_parallel_ranks,
                           double wall_s, bool fallback) {
  CostTimeline all(link_);
  LayTasks(main_tasks_, data_parallel_ranks, &all);
  LayTasks(trial_tasks_, 1, &all);
  fallback = fallback && lora_step;
  PhaseCost& phase = fallback ? fallback_cost_ : lora_step ? lora_cost_ : full_cost_;
  int64_t& count = fallback ? fallback_steps_ : lora_step ? lora_steps_ : full_steps_;
  if (count == 0) phase.set_first_step(step);
  phase.set_last_step(step);
  phase.set_wall_s(phase.wall_s() + wall_s);
  AccumulateTimeline(all, &phase);
  if (lora_step) {
    ++count;
  } else {
    // GPU-only counts the step without its trial tasks; without a trial
    // that is the timeline just laid.
    CostTimeline main_only(link_);
    const CostTimeline* gpu_only = &all;
    if (!trial_tasks_.empty()) {
      LayTasks(main_tasks_, data_parallel_ranks, &main_only);
      gpu_only = &main_only;
    }
    gpu_only_full_s_ += gpu_only->makespan_s();
    gpu_only_full_j_ += gpu_only->total_energy_j();
    ++full_steps_;
  }
  CloseOneOff(step, &switch_tasks_, &switch_cost_);
  main_tasks_.clear();
  trial_tasks_.clear();
}

void CostLedger::CloseRecovery(int64_t step) {
  CloseOneOff(step, &recovery_tasks_, &recovery_cost_);
}

void CostLedger::CloseOneOff(int64_t step, std::vector<TaskRecord>* tasks, PhaseCost* phase) {
  if (tasks->empty()) return;
  CostTimeline timeline(link_);
  LayTasks(*tasks, 1, &timeline);
  AccumulateTimeline(timeline, phase);
  phase->set_first_step(step);
  phase->set_last_step(step);
  tasks->clear();
}

// Long because it writes one report section field by field, each with the
// figures behind it; splitting it would only scatter the method text.
void CostLedger::Compare(double project_epochs, HptStatus* hpt) const {
  HptStatus& h = *hpt;
  h.clear_phases();
  if (full_steps_ > 0) *h.add_phases() = full_cost_;
  if (HasCost(switch_cost_)) *h.add_phases() = switch_cost_;
  if (lora_steps_ > 0) *h.add_phases() = lora_cost_;
  if (fallback_steps_ > 0) *h.add_phases() = fallback_cost_;
  if (HasCost(recovery_cost_)) *h.add_phases() = recovery_cost_;
  const double hpt_s = full_cost_.simulated_s() + switch_cost_.simulated_s() +
                       lora_cost_.simulated_s() + recovery_cost_.simulated_s() +
                       fallback_cost_.simulated_s();
  const double hpt_j = full_cost_.energy_j() + switch_cost_.energy_j() + lora_cost_.energy_j() +
                       recovery_cost_.energy_j() + fallback_cost_.energy_j();
  // Steps after the switch, wherever they ran.
  const int64_t after_switch = lora_steps_ + fallback_steps_;
  const double mean_s = full_steps_ > 0 ? gpu_only_full_s_ / double(full_steps_) : 0;
  const double mean_j = full_steps_ > 0 ? gpu_only_full_j_ / double(full_steps_) : 0;
  CostComparison& c = *h.mutable_comparison();
  c.set_hpt_time_s(hpt_s);
  c.set_hpt_energy_j(hpt_j);
  c.set_gpu_only_time_s(gpu_only_full_s_ + mean_s * double(after_switch));
  c.set_gpu_only_energy_j(gpu_only_full_j_ + mean_j * double(after_switch));
  c.set_time_ratio(hpt_s > 0 ? c.gpu_only_time_s() / hpt_s : 0);
  c.set_energy_ratio(hpt_j > 0 ? c.gpu_only_energy_j() / hpt_j : 0);
  c.set_method(absl::StrCat(
      "simulated training steps on the cost timeline (evaluation excluded). GPU-only = "
      "the ", full_steps_, " full-phase steps as run, without trial tasks (measured), + ",
      after_switch, " steps after the switch at the mean full-phase step (",
      mean_s, " s, ", mean_j, " J; projected). HpT = full phase with trials + switch "
      "(LoRA loads, ReRAM programming) + LoRA-phase steps, all as run",
      fallback_steps_ > 0
          ? absl::StrCat(" (", fallback_steps_,
                         " of them on the GPU workers while the planned devices were gone)")
          : "",
      HasCost(recovery_cost_)
          ? ", + recovery (re-loading devices after a restart or failover)."
          : "."));

  // The paper's length: every epoch of the data at this batch size.
  const double epochs = project_epochs;
  const int64_t n = int64_t(std::ceil(epochs * double(steps_per_epoch_)));
  c.set_project_epochs(epochs);
  c.set_project_steps(n);
  c.set_full_step_s(mean_s);
  c.set_full_step_j(mean_j);
  if (full_steps_ > 0) {
    c.set_full_step_with_trials_s(full_cost_.simulated_s() / double(full_steps_));
    c.set_full_step_with_trials_j(full_cost_.energy_j() / double(full_steps_));
  }
  // The projection's LoRA step: the planned placement's mean, or, when no
  // step ran there, the fallback's.
  const PhaseCost& lora_like = lora_steps_ > 0 ? lora_cost_ : fallback_cost_;
  const int64_t lora_like_steps = lora_steps_ > 0 ? lora_steps_ : fallback_steps_;
  const double lora_mean_s =
      lora_like_steps > 0 ? lora_like.simulated_s() / double(lora_like_steps) : 0;
  const double lora_mean_j =
      lora_like_steps > 0 ? lora_like.energy_j() / double(lora_like_steps) : 0;
  c.set_lora_step_s(lora_mean_s);
  c.set_lora_step_j(lora_mean_j);
  const bool switched = h.switch_step() >= 0 && after_switch > 0;
  const int64_t before = switched ? std::min<int64_t>(h.switch_step(), n) : n;
  c.set_projected_gpu_only_time_s(mean_s * double(n));
  c.set_projected_gpu_only_energy_j(mean_j * double(n));
  if (switched) {
    // The full phase as run (with trials, per step) up to the switch, the
    // switch once, then LoRA-phase steps at their mean.
    const double full_step_s = full_cost_.simulated_s() / double(full_steps_);
    const double full_step_j = full_cost_.energy_j() / double(full_steps_);
    c.set_projected_hpt_time_s(full_step_s * double(before) + switch_cost_.simulated_s() +
                               lora_mean_s * double(n - before));
    c.set_projected_hpt_energy_j(full_step_j * double(before) + switch_cost_.energy_j() +
                                 lora_mean_j * double(n - before));
  } else {
    c.set_projected_hpt_time_s(c.projected_gpu_only_time_s());
    c.set_projected_hpt_energy_j(c.projected_gpu_only_energy_j());
  }
  c.set_projected_time_ratio(c.projected_hpt_time_s() > 0
                                 ? c.projected_gpu_only_time_s() / c.projected_hpt_time_s()
                                 : 0);
  c.set_projected_energy_ratio(c.projected_hpt_energy_j() > 0
                                   ? c.projected_gpu_only_energy_j() / c.projected_hpt_energy_j()
                                   : 0);
  c.set_projection_method(absl::StrCat(
      epochs, " epochs x ", steps_per_epoch_, " steps = ", n, " steps; ",
      switched ? absl::StrCat("HpT: ", before, " full-phase steps at their mean with trials (",
                              full_cost_.simulated_s() / double(full_steps_), " s), the switch, ",
                              n - before, " LoRA-phase steps at their mean (", lora_mean_s,
                              lora_steps_ > 0 ? " s)" : " s, on the fallback GPU workers)")
               : "no switch yet: HpT is full-parameter throughout",
      "; GPU-only: ", n, " steps at the mean full-phase step (", mean_s, " s)."));
  AddTimeNotes(&c);
}

void CostLedger::AddTimeNotes(CostComparison* comparison) const {
  CostComparison& c = *comparison;
  c.clear_time_notes();
  double kernels = 0, launch_bound_s = 0, gpu_s = 0, reram_s = 0, systolic_s = 0, stall = 0,
         cycles = 0;
  for (const DeviceCost& d : device_costs_) {
    const auto& k = d.cost().counters();
    auto get = [&](const char* name) {
      auto it = k.find(name);
      return it == k.end() ? 0.0 : it->second;
    };
    if (d.kind() == "gpu") {
      kernels += get("kernels");
      launch_bound_s += get("launch_bound_s");
      gpu_s += d.cost().simulated_s();
    } else if (d.kind() == "reram") {
      reram_s += d.cost().simulated_s();
    } else if (d.kind() == "systolic") {
      systolic_s += d.cost().simulated_s();
      stall += get("stall_cycles");
      cycles += get("cycles");
    }
  }
  if (gpu_s > 0) {
    c.add_time_notes(absl::StrFormat(
        "GPU: %.0f kernels, %.0f %% of its %.3g s in kernel launches (a step of small "
        "kernels is launch-bound)",
        kernels, 100 * launch_bound_s / gpu_s, gpu_s));
  }
  if (reram_s > 0 || systolic_s > 0) {
    c.add_time_notes(absl::StrFormat(
        "LoRA phase: ReRAM reads %.3g s (in parallel across layers' tiles), systolic %.3g s "
        "(%.0f %% of its cycles DRAM stalls)",
        reram_s, systolic_s, cycles > 0 ? 100 * stall / cycles : 0.0));
  }
  const double transfer_j =
      EnergyOf(full_cost_, "interconnect") + EnergyOf(lora_cost_, "interconnect");
  if (transfer_j > 0) {
    c.add_time_notes(absl::StrFormat("transfers between devices: %.3g J", transfer_j));
  }
}

void CostLedger::SaveTo(CheckpointHeader* h) const {
  *h->mutable_cost() = total_;
  h->clear_device_costs();
  for (const DeviceCost& d : device_costs_) *h->add_device_costs() = d;
  h->set_trainable_bytes(trainable_bytes_);
  *h->mutable_full_cost() = full_cost_;
  *h->mutable_switch_cost() = switch_cost_;
  *h->mutable_lora_cost() = lora_cost_;
  *h->mutable_recovery_cost() = recovery_cost_;
  h->set_gpu_only_full_s(gpu_only_full_s_);
  h->set_gpu_only_full_j(gpu_only_full_j_);
  h->set_full_steps(full_steps_);
  h->set_lora_steps(lora_steps_);
  *h->mutable_fallback_cost() = fallback_cost_;
  h->set_fallback_steps(fallback_steps_);
}

void CostLedger::RestoreFrom(const CheckpointHeader& h,
                             const std::vector<WorkerClient*>& workers) {
  total_ = h.cost();
  device_costs_.assign(h.device_costs().begin(), h.device_costs().end());
  trainable_bytes_ = h.trainable_bytes();
  full_cost_ = h.full_cost();
  switch_cost_ = h.switch_cost();
  lora_cost_ = h.lora_cost();
  recovery_cost_ = h.recovery_cost();
  recovery_cost_.set_phase("recovery");
  gpu_only_full_s_ = h.gpu_only_full_s();
  gpu_only_full_j_ = h.gpu_only_full_j();
  full_steps_ = h.full_steps();
  lora_steps_ = h.lora_steps();
  if (h.has_fallback_cost()) fallback_cost_ = h.fallback_cost();
  fallback_cost_.set_phase("lora-gpu");
  fallback_steps_ = h.fallback_steps();
  // This run's workers take over the costs of the ones they replace where
  // the address is the same.
  cost_index_.clear();
  for (WorkerClient* w : workers) {
    for (size_t i = 0; i < device_costs_.size(); ++i) {
      if (device_costs_[i].worker() == w->address()) cost_index_[w] = i;
    }
  }
}

}  // namespace hpt
