#include "workers/worker_metrics.h"

#include <algorithm>

namespace hpt {

WorkerMetrics::WorkerMetrics(prometheus::Registry& registry,
                             const std::string& kind_in)
    : kind(kind_in),
      tasks(prometheus::BuildCounter()
                .Name("hpt_worker_tasks_total")
                .Help("Tasks a worker finished, by device kind, task type and "
                      "gRPC status code.")
                .Register(registry)),
      task_latency(prometheus::BuildHistogram()
                       .Name("hpt_worker_task_latency_seconds")
                       .Help("Wall time of a task on the worker, by device "
                             "kind and task type.")
                       .Register(registry)),
      measured_seconds(prometheus::BuildCounter()
                           .Name("hpt_worker_busy_seconds_total")
                           .Help("Seconds the device spent running tasks.")
                           .Register(registry)),
      jobs_resident(prometheus::BuildGauge()
                        .Name("hpt_worker_jobs")
                        .Help("Jobs whose parameters are resident on this "
                              "worker.")
                        .Register(registry)
                        .Add({{"kind", kind_in}})),
      simulated_seconds(prometheus::BuildCounter()
                            .Name("hpt_worker_simulated_seconds_total")
                            .Help("Simulated device time of the worker's tasks.")
                            .Register(registry)
                            .Add({{"kind", kind_in}})),
      energy_joules(prometheus::BuildCounter()
                        .Name("hpt_worker_energy_joules_total")
                        .Help("Simulated device energy of the worker's tasks.")
                        .Register(registry)
                        .Add({{"kind", kind_in}})),
      reram_cell_writes(prometheus::BuildCounter()
                            .Name("hpt_reram_cell_writes_total")
                            .Help("ReRAM cells written (programming and rewrites).")
                            .Register(registry)
                            .Add({{"kind", kind_in}})),
      reram_worst_wear(prometheus::BuildGauge()
                           .Name("hpt_reram_worst_cell_wear_ratio")
                           .Help("Writes of the most-written ReRAM cell over its "
                                 "endurance (highest seen).")
                           .Register(registry)
                           .Add({{"kind", kind_in}})),
      systolic_cycles(prometheus::BuildCounter()
                          .Name("hpt_systolic_cycles_total")
                          .Help("Systolic-array cycles of the worker's products.")
                          .Register(registry)
                          .Add({{"kind", kind_in}})),
      systolic_busy_pe_cycles(prometheus::BuildCounter()
                                  .Name("hpt_systolic_utilized_cycles_total")
                                  .Help("Systolic cycles weighted by the share of "
                                        "PEs doing useful work.")
                                  .Register(registry)
                                  .Add({{"kind", kind_in}})),
      job_tasks(prometheus::BuildCounter()
                    .Name("hpt_worker_job_tasks_total")
                    .Help("Tasks a worker finished for a job resident on it, by job and "
                          "task type (dropped when the job is released).")
                    .Register(registry)),
      job_seconds(prometheus::BuildCounter()
                      .Name("hpt_worker_job_task_seconds_total")
                      .Help("Measured seconds of a resident job's tasks on the worker's "
                            "device (dropped when the job is released).")
                      .Register(registry)) {}

void WorkerMetrics::ObserveCost(const CostReport& cost) {
  simulated_seconds.Increment(std::max(0.0, cost.simulated_s()));
  energy_joules.Increment(std::max(0.0, cost.energy_j()));
  const auto& c = cost.counters();
  auto counter = [&](const char* name) {
    auto it = c.find(name);
    return it == c.end() ? 0.0 : std::max(0.0, it->second);
  };
  reram_cell_writes.Increment(counter("cell_writes"));
  if (counter("worst_wear") > reram_worst_wear.Value()) {
    reram_worst_wear.Set(counter("worst_wear"));
  }
  systolic_cycles.Increment(counter("cycles"));
  systolic_busy_pe_cycles.Increment(counter("util_weighted_cycles"));
}

void WorkerMetrics::ObserveJobTask(const std::string& job_id, const std::string& task,
                                   double seconds) {
  if (job_id.empty()) return;
  prometheus::Counter& count = job_tasks.Add({{"kind", kind}, {"job_id", job_id}, {"task", task}});
  prometheus::Counter& time = job_seconds.Add({{"kind", kind}, {"job_id", job_id}});
  count.Increment();
  time.Increment(std::max(0.0, seconds));
  absl::MutexLock lock(&mu_);
  auto& series = job_series_[job_id];
  for (JobSeries one : {JobSeries{&job_tasks, &count}, JobSeries{&job_seconds, &time}}) {
    if (std::find(series.begin(), series.end(), one) == series.end()) series.push_back(one);
  }
}

void WorkerMetrics::ForgetJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = job_series_.find(job_id);
  if (it == job_series_.end()) return;
  for (const auto& [family, counter] : it->second) family->Remove(counter);
  job_series_.erase(it);
}

void WorkerMetrics::ObserveTask(const std::string& task, double seconds,
                                const std::string& code) {
  tasks.Add({{"kind", kind}, {"task", task}, {"code", code}}).Increment();
  task_latency
      .Add({{"kind", kind}, {"task", task}},
           prometheus::Histogram::BucketBoundaries{
               0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
               5, 10, 30})
      .Observe(seconds);
  measured_seconds.Add({{"kind", kind}}).Increment(seconds);
}

}  // namespace hpt
