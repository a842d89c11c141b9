#include "cost/baseline_rows.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/gpu_baseline.h"

namespace hpt {

BaselineComparison BaselineRow(const std::string& name, const std::string& source,
                               const CostComparison& c) {
  BaselineComparison e;
  e.set_baseline(name);
  e.set_source(source);
  e.set_gpu_only_time_s(c.gpu_only_time_s());
  e.set_gpu_only_energy_j(c.gpu_only_energy_j());
  e.set_hpt_time_s(c.hpt_time_s());
  e.set_hpt_energy_j(c.hpt_energy_j());
  e.set_time_ratio(c.time_ratio());
  e.set_energy_ratio(c.energy_ratio());
  e.set_projected_time_ratio(c.projected_time_ratio());
  e.set_projected_energy_ratio(c.projected_energy_ratio());
  e.set_step_s(c.full_step_s());
  e.set_step_j(c.full_step_j());
  return e;
}

namespace {

// How a CUDA worker times its device (DeviceMeter::measured_by).
constexpr char kCudaEvents[] = "cuda events";

// The name a probe's measured baseline is shown by: what ran. The probe's
// `paper` is the paper's eager per-parameter Adam step from C++, with no
// Python layer, so it is never shown as the paper's own.
std::string MeasuredName(GpuBaseline::Name probe_baseline) {
  return probe_baseline == GpuBaseline::paper ? "libtorch-eager" : GpuBaselineName(probe_baseline);
}

// Where a measured row was timed ("NVIDIA H100 80GB HBM3 (cuda:0, cuda
// events)"), and whether that was a GPU.
struct MeasuredWhere {
  std::string on;
  bool gpu = false;
};
MeasuredWhere WhereMeasured(const std::string& name, const std::string& device,
                            const std::string& by) {
  return {absl::StrCat(name.empty() ? device : name, " (", device, ", ",
                       by.empty() ? "wall time" : by, ")"),
          by == kCudaEvents};
}

// A row whose GPU side is a measured full step (`step_j` 0: energy not
// measured, so the row gives no energy figures).
BaselineComparison MeasuredRow(const std::string& name, const std::string& source,
                               const MeasuredWhere& where, RecordedPhases phases,
                               const ComparisonInputs& in, double step_s, double step_j,
                               double with_trials) {
  phases.SetMeasuredFull(step_s, step_j, with_trials);
  BaselineComparison e = BaselineRow(name, source, Compare(phases, in));
  e.set_measured(true);
  e.set_measured_on(where.on);
  e.set_measured_on_gpu(where.gpu);
  if (step_j <= 0) {
    e.clear_gpu_only_energy_j();
    e.clear_hpt_energy_j();
    e.clear_energy_ratio();
    e.clear_projected_energy_ratio();
    e.clear_step_j();
  }
  return e;
}

}  // namespace

void AddMeasuredRows(const WorkRecord& record, const RecordedPhases& libtorch,
                     const ComparisonInputs& in, CostComparison* out) {
  if (libtorch.Steps(CostPhase::full) == 0) return;
  // The trial's share of a full-phase step: as the job's GPU measured it,
  // or as the model has it.
  double with_trials =
      libtorch.gpu_only_full_s > 0 ? libtorch.full.simulated_s() / libtorch.gpu_only_full_s : 1;
  for (const RecordedPhase& p : record.phases()) {
    if (p.phase() != CostPhase::full || p.gpu_steps() == 0 || !(p.gpu_main_s() > 0)) continue;
    with_trials = p.gpu_all_s() / p.gpu_main_s();
    MeasuredWhere on;
    for (const RecordedDevice& d : record.devices()) {
      if (d.kind() != DeviceKind::gpu) continue;
      on = WhereMeasured(d.device_name(), d.device(), d.measured_by());
      break;
    }
    const double n = double(p.gpu_steps());
    *out->add_baselines() =
        MeasuredRow("libtorch",
                    "the job's own full-phase steps on its GPU workers (C++ eager, per-parameter "
                    "Adam), measured",
                    on, libtorch, in, p.gpu_main_s() / n, p.gpu_main_j() / n, with_trials);
  }
  for (const MeasuredBaseline& m : record.probes()) {
    const MeasuredWhere on = WhereMeasured(m.device_name(), m.device(), m.measured_by());
    if (!m.not_run().empty() || !(m.step_s() > 0)) {
      BaselineComparison* e = out->add_baselines();
      e->set_baseline(MeasuredName(m.baseline()));
      e->set_source(m.path());
      e->set_measured(true);
      e->set_measured_on(on.on);
      e->set_not_run(m.not_run().empty() ? "not run" : m.not_run());
      continue;
    }
    *out->add_baselines() =
        MeasuredRow(MeasuredName(m.baseline()),
                    absl::StrCat(m.path(), "; probe: median of ", m.timed_steps(), " steps after ",
                                 m.warm_up(), " at batch ", m.batch()),
                    on, libtorch, in, m.step_s(), m.step_j(), with_trials);
  }
}

}  // namespace hpt
