#include "coordinator/jobs/coordinator_metrics.h"

#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "common/cost_phase.h"
#include "common/device_kind.h"
#include "common/training_phase.h"

namespace hpt {
namespace {

// Where a task's measured time was spent: "cuda" for a CUDA device
// ("cuda:0"), "cpu" for anything else (a GPU worker on the CPU, or the
// host that simulates a ReRAM or systolic device).
const char* RanOn(const std::string& device) {
  return absl::StartsWith(device, "cuda") ? "cuda" : "cpu";
}

}  // namespace

// Long because it is a table: every family the coordinator exports, with
// its help text and buckets, built once here (prometheus-cpp's habit).
CoordinatorMetrics::CoordinatorMetrics(prometheus::Registry& registry)
    : jobs(prometheus::BuildGauge()
               .Name("hpt_jobs")
               .Help("Jobs known to the coordinator, by state.")
               .Register(registry)),
      jobs_submitted(prometheus::BuildCounter()
                         .Name("hpt_jobs_submitted_total")
                         .Help("Jobs accepted by SubmitJob.")
                         .Register(registry)),
      job_loss(prometheus::BuildGauge()
                   .Name("hpt_job_loss")
                   .Help("Training loss (MSE) of the job's last step.")
                   .Register(registry)),
      job_test_loss(prometheus::BuildGauge()
                        .Name("hpt_job_test_loss")
                        .Help("Test-split MSE after the job's last epoch.")
                        .Register(registry)),
      job_steps(prometheus::BuildGauge()
                    .Name("hpt_job_steps")
                    .Help("Optimizer steps the job has taken.")
                    .Register(registry)),
      job_phase(prometheus::BuildGauge()
                    .Name("hpt_job_phase")
                    .Help("1 for the job's current training phase (full, "
                          "lora), 0 otherwise.")
                    .Register(registry)),
      job_samples_per_second(prometheus::BuildGauge()
                                 .Name("hpt_job_samples_per_second")
                                 .Help("Training throughput of the job.")
                                 .Register(registry)),
      job_device_seconds(prometheus::BuildGauge()
                             .Name("hpt_job_device_measured_seconds")
                             .Help("Measured time of the job's tasks, by device kind (the "
                                   "role) and ran_on (cuda, or cpu: a GPU worker without "
                                   "CUDA, or a simulated device's host).")
                             .Register(registry)),
      job_device_simulated_seconds(
          prometheus::BuildGauge()
              .Name("hpt_job_device_simulated_seconds")
              .Help("Simulated device time of the job's tasks, by device kind.")
              .Register(registry)),
      job_device_energy(prometheus::BuildGauge()
                            .Name("hpt_job_device_energy_joules")
                            .Help("Simulated device energy of the job's tasks, "
                                  "by device kind.")
                            .Register(registry)),
      task_latency(prometheus::BuildHistogram()
                       .Name("hpt_task_latency_seconds")
                       .Help("Round-trip time of worker calls seen by the "
                             "coordinator, by device kind and task type.")
                       .Register(registry)),
      rpc_errors(prometheus::BuildCounter()
                     .Name("hpt_rpc_errors_total")
                     .Help("Failed worker calls, by task type and gRPC code.")
                     .Register(registry)),
      workers_up(prometheus::BuildGauge()
                     .Name("hpt_workers_up")
                     .Help("Live registered workers, by device kind.")
                     .Register(registry)),
      phase_switches(prometheus::BuildCounter()
                         .Name("hpt_phase_switches_total")
                         .Help("Jobs that switched to the LoRA phase.")
                         .Register(registry)),
      phase_events(prometheus::BuildCounter()
                       .Name("hpt_phase_events_total")
                       .Help("Phase-controller events, by kind (check, "
                             "trial_start, trial_end, switch).")
                       .Register(registry)),
      job_switch_step(prometheus::BuildGauge()
                          .Name("hpt_job_switch_step")
                          .Help("First LoRA step of the job; -1 before the switch.")
                          .Register(registry)),
      job_waiting_for_workers(
          prometheus::BuildGauge()
              .Name("hpt_job_waiting_for_workers")
              .Help("1 while the job waits for a device worker its placement needs "
                    "(hptctl status says which).")
              .Register(registry)),
      job_on_fallback(prometheus::BuildGauge()
                          .Name("hpt_job_on_fallback")
                          .Help("1 while the job's LoRA phase runs on its fallback placement "
                                "because the planned devices are gone.")
                          .Register(registry)),
      job_phase_simulated_seconds(prometheus::BuildGauge()
                                      .Name("hpt_job_phase_simulated_seconds")
                                      .Help("Simulated time on the cost timeline, by phase (full, "
                                            "switch, lora).")
                                      .Register(registry)),
      job_phase_energy(prometheus::BuildGauge()
                           .Name("hpt_job_phase_energy_joules")
                           .Help("Simulated energy (devices and interconnect), "
                                 "by phase.")
                           .Register(registry)),
      job_gpu_only_ratio(prometheus::BuildGauge()
                             .Name("hpt_job_gpu_only_ratio")
                             .Help("GPU-only full-parameter cost over HpT's, by "
                                   "quantity (time, energy); > 1: HpT saves.")
                             .Register(registry)),
      job_test_metric(prometheus::BuildGauge()
                          .Name("hpt_job_test_metric")
                          .Help("Test-split quality in data units, by metric "
                                "(rmse, mae, nse, r2; skill over persistence and "
                                "persistence_rmse where known).")
                          .Register(registry)) {}

void CoordinatorMetrics::SetJobCounts(const std::map<JobState, int>& counts) {
  for (JobState state : {LOADING, QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED}) {
    auto it = counts.find(state);
    jobs.Add({{"state", absl::AsciiStrToLower(JobState_Name(state))}})
        .Set(it == counts.end() ? 0 : it->second);
  }
}

void CoordinatorMetrics::ObserveJob(const Job& job) {
  const prometheus::Labels labels{{"job_id", job.job_id()}};
  const JobProgress& p = job.progress();
  job_loss.Add(labels).Set(p.loss());
  job_test_loss.Add(labels).Set(p.test_loss());
  job_steps.Add(labels).Set(static_cast<double>(p.step()));
  job_samples_per_second.Add(labels).Set(p.samples_per_s());
  const TrainingPhase::Name phase = PhaseOrFull(job.hpt().phase());
  for (TrainingPhase::Name p : kTrainingPhases) {
    job_phase.Add({{"job_id", job.job_id()}, {"phase", PhaseName(p)}}).Set(phase == p ? 1 : 0);
  }
  const HptStatus& hpt = job.hpt();
  job_switch_step.Add(labels).Set(double(hpt.switch_step()));
  job_waiting_for_workers.Add(labels).Set(job.waiting_for().empty() ? 0 : 1);
  job_on_fallback.Add(labels).Set(hpt.fallback_reason().empty() ? 0 : 1);
  for (const PhaseCost& c : hpt.phases()) {
    const prometheus::Labels l{{"job_id", job.job_id()}, {"phase", CostPhaseName(c.phase())}};
    job_phase_simulated_seconds.Add(l).Set(c.simulated_s());
    job_phase_energy.Add(l).Set(c.energy_j());
  }
  job_gpu_only_ratio.Add({{"job_id", job.job_id()}, {"quantity", "time"}})
      .Set(hpt.comparison().time_ratio());
  job_gpu_only_ratio.Add({{"job_id", job.job_id()}, {"quantity", "energy"}})
      .Set(hpt.comparison().energy_ratio());
  int& counted = events_counted_[job.job_id()];
  for (; counted < hpt.events_size(); ++counted) {
    const PhaseEvent& e = hpt.events(counted);
    phase_events.Add({{"kind", absl::AsciiStrToLower(PhaseEvent::Kind_Name(e.kind()))}})
        .Increment();
    if (e.kind() == PhaseEvent::SWITCH) phase_switches.Add({}).Increment();
  }
  const QualityMetrics& q = job.test_metrics();
  if (q.values() > 0) {
    for (auto [name, value] : std::initializer_list<std::pair<const char*, double>>{
             {"rmse", q.rmse()}, {"mae", q.mae()}, {"nse", q.nse()}, {"r2", q.r2()}}) {
      job_test_metric.Add({{"job_id", job.job_id()}, {"metric", name}}).Set(value);
    }
    // Beside persistence: the reference every forecast must beat.
    if (q.persistence_rmse() > 0) {
      job_test_metric.Add({{"job_id", job.job_id()}, {"metric", "skill"}}).Set(q.skill());
      job_test_metric.Add({{"job_id", job.job_id()}, {"metric", "persistence_rmse"}})
          .Set(q.persistence_rmse());
    }
  }
  std::map<std::string, CostReport> by_kind;
  std::map<std::pair<std::string, std::string>, double> measured;  // by kind, ran_on
  for (const DeviceCost& d : job.device_costs()) {
    CostReport& c = by_kind[KindName(d.kind())];
    c.set_simulated_s(c.simulated_s() + d.cost().simulated_s());
    c.set_energy_j(c.energy_j() + d.cost().energy_j());
    measured[{KindName(d.kind()), RanOn(d.device())}] += d.cost().measured_s();
  }
  for (const auto& [kind, c] : by_kind) {
    const prometheus::Labels l{{"job_id", job.job_id()}, {"kind", kind}};
    job_device_simulated_seconds.Add(l).Set(c.simulated_s());
    job_device_energy.Add(l).Set(c.energy_j());
  }
  for (const auto& [key, seconds] : measured) {
    job_device_seconds.Add({{"job_id", job.job_id()}, {"kind", key.first}, {"ran_on", key.second}})
        .Set(seconds);
  }
}

void CoordinatorMetrics::ForgetJob(const std::string& job_id) {
  const prometheus::Labels labels{{"job_id", job_id}};
  for (auto* family : {&job_loss, &job_test_loss, &job_steps,
                       &job_samples_per_second}) {
    family->Remove(&family->Add(labels));
  }
  for (auto* family : {&job_switch_step, &job_waiting_for_workers, &job_on_fallback}) {
    family->Remove(&family->Add(labels));
  }
  events_counted_.erase(job_id);
  auto drop = [&](prometheus::Family<prometheus::Gauge>& family, const char* label,
                  std::initializer_list<const char*> values) {
    for (const char* v : values) {
      const prometheus::Labels l{{"job_id", job_id}, {label, v}};
      if (family.Has(l)) family.Remove(&family.Add(l));
    }
  };
  for (TrainingPhase::Name p : kTrainingPhases) drop(job_phase, "phase", {PhaseName(p).c_str()});
  for (auto* family : {&job_phase_simulated_seconds, &job_phase_energy}) {
    for (CostPhase::Name p : kCostPhases) drop(*family, "phase", {CostPhaseName(p).c_str()});
  }
  drop(job_gpu_only_ratio, "quantity", {"time", "energy"});
  drop(job_test_metric, "metric", {"rmse", "mae", "nse", "r2", "skill", "persistence_rmse"});
  for (DeviceKind::Name k : kDeviceKinds) {
    const std::string& kind = KindName(k);
    const prometheus::Labels l{{"job_id", job_id}, {"kind", kind}};
    for (auto* family : {&job_device_simulated_seconds, &job_device_energy}) {
      if (family->Has(l)) family->Remove(&family->Add(l));
    }
    for (const char* on : {"cuda", "cpu"}) {
      const prometheus::Labels m{{"job_id", job_id}, {"kind", kind}, {"ran_on", on}};
      if (job_device_seconds.Has(m)) job_device_seconds.Remove(&job_device_seconds.Add(m));
    }
  }
}

void CoordinatorMetrics::ObserveRpc(const std::string& kind, const std::string& method,
                                    const std::string& code, double seconds) {
  task_latency
      .Add({{"kind", kind}, {"task", method}},
           prometheus::Histogram::BucketBoundaries{
               0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
               5, 10, 30})
      .Observe(seconds);
  if (code != "OK") rpc_errors.Add({{"task", method}, {"code", code}}).Increment();
}

void CoordinatorMetrics::SetWorkersUp(const std::string& kind, int count) {
  workers_up.Add({{"kind", kind}}).Set(count);
}

}  // namespace hpt
