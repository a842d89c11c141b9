#include "cost/cost_comparison.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cost_phase.h"
#include "cost/device_totals.h"

namespace hpt {
namespace {

bool HasCost(const PhaseCost& phase) { return phase.simulated_s() > 0 || phase.energy_j() > 0; }

double EnergyOf(const PhaseCost& phase, const std::string& kind) {
  auto it = phase.device_energy_j().find(kind);
  return it == phase.device_energy_j().end() ? 0 : it->second;
}

void AddSteps(const StepTotals& step, double count, PhaseCost* phase) {
  phase->set_simulated_s(phase->simulated_s() + count * step.makespan_s);
  phase->set_energy_j(phase->energy_j() + count * step.energy_j);
  auto& busy = *phase->mutable_device_busy_s();
  auto& energy = *phase->mutable_device_energy_j();
  for (const auto& [kind, s] : step.busy_s) busy[kind] += count * s;
  for (const auto& [kind, j] : step.energy_by_kind) energy[kind] += count * j;
}

}  // namespace

void LayTasks(const std::vector<LayTask>& tasks, int ranks, int64_t trainable_bytes,
              CostTimeline* timeline, std::vector<LaidPiece>* pieces) {
  // `share` of the task (a pipeline piece) on its resource.
  auto add = [&](const LayTask& t, const std::vector<int>& deps, int64_t bytes,
                 double share = 1.0) {
    const int id =
        timeline->Add(t.track, t.kind, t.simulated_s * share, t.energy_j * share, deps, bytes);
    if (pieces != nullptr) pieces->push_back({id, int(&t - tasks.data())});
    return id;
  };
  if (ranks > 1) {
    // Ranks run concurrently; every update waits for all backwards and the
    // ring allreduce moves 2 (n - 1) / n of the gradient into each rank.
    const double n = double(ranks);
    const int64_t allreduce = int64_t(2 * (n - 1) / n * double(trainable_bytes));
    std::map<int, int> forward;
    std::vector<int> backwards;
    for (const LayTask& t : tasks) {
      if (t.type == "forward") {
        forward[t.device] = add(t, {}, t.bytes_in);
      } else if (t.type == "backward") {
        auto it = forward.find(t.device);
        backwards.push_back(
            add(t, it == forward.end() ? std::vector<int>{} : std::vector<int>{it->second}, 0));
      } else {
        add(t, backwards, allreduce);
      }
    }
    return;
  }
  const bool pipelined =
      std::any_of(tasks.begin(), tasks.end(), [](const LayTask& t) { return t.samples > 1; });
  if (pipelined) {
    // Device segments process samples independently (attention mixes
    // tokens, not samples): each task of the chain becomes one piece per
    // sample, piece b after piece b of the task before, so segments on
    // different devices (and ReRAM segments in their own tiles) overlap
    // like a pipeline across the batch (PipeLayer, Song et al., HPCA 2017).
    // A piece costs the task's 1/B. Updates wait for every last piece.
    std::vector<int> previous_pieces, last_backward_pieces;
    for (const LayTask& t : tasks) {
      if (t.type == "update") {
        add(t, last_backward_pieces.empty() ? previous_pieces : last_backward_pieces, 0);
        continue;
      }
      const int64_t pieces = std::max<int64_t>(1, t.samples);
      std::vector<int> piece_ids(pieces);
      for (int64_t b = 0; b < pieces; ++b) {
        std::vector<int> deps;
        if (!previous_pieces.empty()) {
          deps.push_back(previous_pieces[std::min<size_t>(b, previous_pieces.size() - 1)]);
        }
        const double share = 1.0 / double(pieces);
        piece_ids[b] = add(t, deps, int64_t(double(t.bytes_in) * share), share);
      }
      previous_pieces = piece_ids;
      if (t.type == "backward") last_backward_pieces = piece_ids;
    }
    return;
  }
  // A chain: each forward or backward after the one before; updates after
  // the last backward, concurrently on their devices.
  int previous = -1, last_backward = -1;
  for (const LayTask& t : tasks) {
    if (t.type == "update") {
      const int dep = last_backward >= 0 ? last_backward : previous;
      add(t, dep >= 0 ? std::vector<int>{dep} : std::vector<int>{}, 0);
      continue;
    }
    previous = add(t, previous >= 0 ? std::vector<int>{previous} : std::vector<int>{}, t.bytes_in);
    if (t.type == "backward") last_backward = previous;
  }
}

StepTotals StepTotals::Of(const CostTimeline& t) {
  StepTotals s;
  s.makespan_s = t.makespan_s();
  s.energy_j = t.total_energy_j();
  s.busy_s = t.busy_s();
  s.energy_by_kind = t.energy_j();
  if (t.transfer_energy_j() > 0) s.energy_by_kind["interconnect"] += t.transfer_energy_j();
  return s;
}

RecordedPhases::RecordedPhases() {
  for (CostPhase::Name phase : kCostPhases) {
    PhaseCost* p = Of(phase);
    if (p == nullptr) continue;  // off_step: in no phase's cost
    p->set_phase(phase);
    p->set_first_step(-1);
    p->set_last_step(-1);
  }
}

PhaseCost* RecordedPhases::Of(CostPhase::Name phase) {
  switch (phase) {
    case CostPhase::full:
      return &full;
    case CostPhase::partial:
      return &partial;
    case CostPhase::switch_:
      return &switch_cost;
    case CostPhase::lora:
      return &lora;
    case CostPhase::lora_gpu:
      return &fallback;
    case CostPhase::recovery:
      return &recovery;
    default:
      return nullptr;
  }
}

void RecordedPhases::Add(CostPhase::Name phase, double count, const StepTotals& step,
                         const StepTotals& main_only) {
  PhaseCost* p = Of(phase);
  if (p == nullptr) return;
  AddSteps(step, count, p);
  if (phase == CostPhase::full) {
    gpu_only_full_s += count * main_only.makespan_s;
    gpu_only_full_j += count * main_only.energy_j;
  }
  if (IsTrainingStep(phase)) steps_[phase] += int64_t(count);
}

void RecordedPhases::SetMeasured(const WorkRecord& record) {
  for (const RecordedPhase& r : record.phases()) {
    PhaseCost* p = Of(r.phase());
    if (p == nullptr) continue;
    p->set_first_step(r.first_step());
    p->set_last_step(r.last_step());
    p->set_wall_s(r.wall_s());
  }
}

void RecordedPhases::SetMeasuredFull(double step_s, double step_j, double with_trials) {
  const double n = double(Steps(CostPhase::full));
  gpu_only_full_s = step_s * n;
  gpu_only_full_j = step_j * n;
  full.set_simulated_s(step_s * n * with_trials);
  full.set_energy_j(step_j * n * with_trials);
}

std::vector<PhaseCost> RecordedPhases::Listed() const {
  std::vector<PhaseCost> out;
  if (Steps(CostPhase::full) > 0) out.push_back(full);
  if (Steps(CostPhase::partial) > 0) out.push_back(partial);
  if (HasCost(switch_cost)) out.push_back(switch_cost);
  if (Steps(CostPhase::lora) > 0) out.push_back(lora);
  if (Steps(CostPhase::lora_gpu) > 0) out.push_back(fallback);
  if (HasCost(recovery)) out.push_back(recovery);
  return out;
}

namespace {

// A mean step, in seconds and joules.
struct PerStep {
  double s = 0, j = 0;
};

// `s` seconds and `j` joules over `steps` steps, a step; zeros for none.
PerStep Mean(double s, double j, int64_t steps) {
  if (steps <= 0) return {};
  return {s / double(steps), j / double(steps)};
}

// A phase's mean step over `steps` of them.
PerStep MeanStep(const PhaseCost& phase, int64_t steps) {
  return Mean(phase.simulated_s(), phase.energy_j(), steps);
}

// The mean full-phase step without trials (what GPU-only training takes a
// step); zeros before any.
PerStep MeanFullStep(const RecordedPhases& p) {
  return Mean(p.gpu_only_full_s, p.gpu_only_full_j, p.Steps(CostPhase::full));
}

// The comparison as run: HpT's every phase against GPU-only training of
// as many steps, with the method behind the figures.
void CompareAsRun(const RecordedPhases& p, CostComparison* c) {
  const int64_t full_steps = p.Steps(CostPhase::full);
  const int64_t partial_steps = p.Steps(CostPhase::partial);
  const int64_t lora_steps = p.Steps(CostPhase::lora);
  const int64_t fallback_steps = p.Steps(CostPhase::lora_gpu);
  const double hpt_s = p.full.simulated_s() + p.partial.simulated_s() +
                       p.switch_cost.simulated_s() + p.lora.simulated_s() +
                       p.recovery.simulated_s() + p.fallback.simulated_s();
  const double hpt_j = p.full.energy_j() + p.partial.energy_j() + p.switch_cost.energy_j() +
                       p.lora.energy_j() + p.recovery.energy_j() + p.fallback.energy_j();
  // Steps after the first switch (a layer's, under layerwise), wherever
  // they ran.
  const int64_t after_switch = partial_steps + lora_steps + fallback_steps;
  const auto [mean_s, mean_j] = MeanFullStep(p);
  c->set_hpt_time_s(hpt_s);
  c->set_hpt_energy_j(hpt_j);
  c->set_gpu_only_time_s(p.gpu_only_full_s + mean_s * double(after_switch));
  c->set_gpu_only_energy_j(p.gpu_only_full_j + mean_j * double(after_switch));
  c->set_time_ratio(hpt_s > 0 ? c->gpu_only_time_s() / hpt_s : 0);
  c->set_energy_ratio(hpt_j > 0 ? c->gpu_only_energy_j() / hpt_j : 0);
  c->set_method(absl::StrCat(
      "simulated training steps on the cost timeline (evaluation excluded). GPU-only = "
      "the ",
      full_steps, " full-phase steps as run, without trial tasks (measured), + ", after_switch,
      " steps after the switch at the mean full-phase step (", mean_s, " s, ", mean_j,
      " J; projected). HpT = full phase with trials + switch "
      "(LoRA loads, ReRAM programming) + ",
      partial_steps > 0 ? "full-phase steps with some layers on the devices + " : "",
      "LoRA-phase steps, all as run",
      fallback_steps > 0
          ? absl::StrCat(" (", fallback_steps,
                         " of them on the GPU workers while the planned devices were gone)")
          : "",
      HasCost(p.recovery) ? ", + recovery (re-loading devices after a restart or failover)."
                          : "."));
}

// The comparison projected to the paper's length: every epoch of the data
// at this batch size, each phase's steps at their mean.
void CompareProjected(const RecordedPhases& p, const ComparisonInputs& in, CostComparison* c) {
  const int64_t full_steps = p.Steps(CostPhase::full);
  const int64_t partial_steps = p.Steps(CostPhase::partial);
  const int64_t lora_steps = p.Steps(CostPhase::lora);
  const int64_t fallback_steps = p.Steps(CostPhase::lora_gpu);
  const double epochs = in.project_epochs;
  const int64_t n = int64_t(std::ceil(epochs * double(in.steps_per_epoch)));
  const auto [mean_s, mean_j] = MeanFullStep(p);
  c->set_project_epochs(epochs);
  c->set_project_steps(n);
  c->set_full_step_s(mean_s);
  c->set_full_step_j(mean_j);
  const PerStep with_trials = MeanStep(p.full, full_steps);
  c->set_full_step_with_trials_s(with_trials.s);
  c->set_full_step_with_trials_j(with_trials.j);
  // The projection's LoRA step: the planned placement's mean, or, when no
  // step ran there, the fallback's.
  const PerStep lora_mean =
      lora_steps > 0 ? MeanStep(p.lora, lora_steps) : MeanStep(p.fallback, fallback_steps);
  c->set_lora_step_s(lora_mean.s);
  c->set_lora_step_j(lora_mean.j);
  const bool switched = in.switch_step >= 0 && lora_steps + fallback_steps > 0;
  // Layerwise on the devices: the steps between the first layer's switch
  // and the last's (to the end, where some layer never switched yet).
  const PerStep partial_mean = MeanStep(p.partial, partial_steps);
  int64_t before = switched ? std::min<int64_t>(in.switch_step - partial_steps, n) : n;
  if (!switched && partial_steps > 0) before = std::min<int64_t>(full_steps, n);
  before = std::max<int64_t>(before, 0);
  const int64_t partial = switched ? std::min<int64_t>(partial_steps, n - before)
                                   : (partial_steps > 0 ? n - before : 0);
  c->set_projected_gpu_only_time_s(mean_s * double(n));
  c->set_projected_gpu_only_energy_j(mean_j * double(n));
  if (switched || partial > 0) {
    // The full phase as run (with trials, per step) up to the first
    // switch, the partial steps at their mean, the switches once, then
    // LoRA-phase steps at their mean.
    const int64_t lora_n = n - before - partial;
    c->set_projected_hpt_time_s(c->full_step_with_trials_s() * double(before) +
                                partial_mean.s * double(partial) + p.switch_cost.simulated_s() +
                                lora_mean.s * double(lora_n));
    c->set_projected_hpt_energy_j(c->full_step_with_trials_j() * double(before) +
                                  partial_mean.j * double(partial) + p.switch_cost.energy_j() +
                                  lora_mean.j * double(lora_n));
  } else {
    c->set_projected_hpt_time_s(c->projected_gpu_only_time_s());
    c->set_projected_hpt_energy_j(c->projected_gpu_only_energy_j());
  }
  c->set_projected_time_ratio(c->projected_hpt_time_s() > 0
                                  ? c->projected_gpu_only_time_s() / c->projected_hpt_time_s()
                                  : 0);
  c->set_projected_energy_ratio(
      c->projected_hpt_energy_j() > 0
          ? c->projected_gpu_only_energy_j() / c->projected_hpt_energy_j()
          : 0);
  c->set_projection_method(absl::StrCat(
      epochs, " epochs x ", in.steps_per_epoch, " steps = ", n, " steps; ",
      switched || partial > 0
          ? absl::StrCat(
                "HpT: ", before, " full-phase steps at their mean with trials (",
                c->full_step_with_trials_s(), " s), ",
                partial > 0 ? absl::StrCat(partial,
                                           " steps with some layers switched, on the "
                                           "devices, at their mean (",
                                           partial_mean.s, " s), ")
                            : "",
                "the switch",
                switched ? absl::StrCat(", ", n - before - partial,
                                        " LoRA-phase steps at their mean (", lora_mean.s,
                                        lora_steps > 0 ? " s)" : " s, on the fallback GPU workers)")
                         : " of the layers so far")
          : "no switch yet: HpT is full-parameter throughout",
      "; GPU-only: ", n, " steps at the mean full-phase step (", mean_s, " s)."));
}

}  // namespace

CostComparison Compare(const RecordedPhases& p, const ComparisonInputs& in) {
  CostComparison c;
  CompareAsRun(p, &c);
  CompareProjected(p, in, &c);
  // A reference GPU with no board power (a profile calibrated where NVML
  // does not answer, a CPU's): its steps cost no energy, so neither side's
  // energy is known. The fields stay unset, which the report shows as not
  // known, rather than a ratio of zero.
  if (p.gpu_only_full_s > 0 && p.gpu_only_full_j <= 0) {
    c.clear_hpt_energy_j();
    c.clear_gpu_only_energy_j();
    c.clear_energy_ratio();
    c.clear_projected_hpt_energy_j();
    c.clear_projected_gpu_only_energy_j();
    c.clear_projected_energy_ratio();
  }
  return c;
}

void AddTimeNotes(const std::vector<DeviceCost>& devices, const RecordedPhases& p,
                  CostComparison* comparison) {
  CostComparison& c = *comparison;
  c.clear_time_notes();
  const DeviceTotals t = DeviceTotalsOf(devices);
  if (t.gpu_s > 0) {
    c.add_time_notes(absl::StrFormat(
        "GPU: %.0f kernels, %.0f %% of its %.3g s waiting on the host (kernel launches and "
        "op calls: a step of small kernels is launch-bound)",
        t.gpu_kernels, 100 * t.launch_bound_s / t.gpu_s, t.gpu_s));
  }
  if (t.reram_s > 0 || t.systolic_s > 0) {
    c.add_time_notes(absl::StrFormat(
        "LoRA phase: ReRAM reads %.3g s (in parallel across layers' tiles), systolic %.3g s "
        "(%.0f %% of its cycles DRAM stalls)",
        t.reram_s, t.systolic_s,
        t.systolic_cycles > 0 ? 100 * t.stall_cycles / t.systolic_cycles : 0.0));
  }
  const double transfer_j =
      EnergyOf(p.full, "interconnect") + EnergyOf(p.lora, "interconnect");
  if (transfer_j > 0) {
    c.add_time_notes(absl::StrFormat("transfers between devices: %.3g J", transfer_j));
  }
}

}  // namespace hpt
