// Prometheus metric families of a worker, built once from the registry the
// worker is given.
#ifndef HPT_WORKERS_WORKER_METRICS_H_
#define HPT_WORKERS_WORKER_METRICS_H_

#include <string>

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
};

}  // namespace hpt

#endif  // HPT_WORKERS_WORKER_METRICS_H_
