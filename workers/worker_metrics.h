// Prometheus metric families of a worker, built once from the registry the
// worker is given.
#ifndef HPT_WORKERS_WORKER_METRICS_H_
#define HPT_WORKERS_WORKER_METRICS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/common.pb.h"

namespace hpt {

struct WorkerMetrics {
  WorkerMetrics(prometheus::Registry& registry, const std::string& kind);

  // Records one finished task: its latency and its outcome code.
  void ObserveTask(const std::string& task, double seconds,
                   const std::string& code);

  // Records a task's simulated cost and device counters.
  void ObserveCost(const CostReport& cost);

  // A task of job `job_id` that took `seconds` on the device: the series
  // labelled with the job (hpt_worker_job_tasks_total,
  // hpt_worker_job_task_seconds_total), which live while the job is
  // resident here. Thread-safe.
  void ObserveJobTask(const std::string& job_id, const std::string& task, double seconds);
  // Drops the job's series (its Release).
  void ForgetJob(const std::string& job_id);

  const std::string kind;
  prometheus::Family<prometheus::Counter>& tasks;
  prometheus::Family<prometheus::Histogram>& task_latency;
  prometheus::Family<prometheus::Counter>& measured_seconds;
  prometheus::Gauge& jobs_resident;
  prometheus::Counter& simulated_seconds;
  prometheus::Counter& energy_joules;
  // ReRAM: cells written (programming and rewrites) and the most-written
  // cell's share of its endurance.
  prometheus::Counter& reram_cell_writes;
  prometheus::Gauge& reram_worst_wear;
  // Systolic: cycles and utilisation-weighted cycles (their rate ratio is
  // the array's utilisation).
  prometheus::Counter& systolic_cycles;
  prometheus::Counter& systolic_busy_pe_cycles;
  prometheus::Family<prometheus::Counter>& job_tasks;
  prometheus::Family<prometheus::Counter>& job_seconds;

 private:
  absl::Mutex mu_;
  // Each resident job's series and their families, to remove at its release.
  using JobSeries = std::pair<prometheus::Family<prometheus::Counter>*, prometheus::Counter*>;
  std::map<std::string, std::vector<JobSeries>> job_series_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hpt

#endif  // HPT_WORKERS_WORKER_METRICS_H_
