// Prometheus metric families of a worker, built once from the registry the
// worker is given.
#ifndef HPT_WORKERS_WORKER_METRICS_H_
#define HPT_WORKERS_WORKER_METRICS_H_

#include <string>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace hpt {

struct WorkerMetrics {
  WorkerMetrics(prometheus::Registry& registry, const std::string& kind);

  // Records one finished task: its latency and its outcome code.
  void ObserveTask(const std::string& task, double seconds,
                   const std::string& code);

  const std::string kind;
  prometheus::Family<prometheus::Counter>& tasks;
  prometheus::Family<prometheus::Histogram>& task_latency;
  prometheus::Family<prometheus::Counter>& measured_seconds;
  prometheus::Gauge& jobs_resident;
};

}  // namespace hpt

#endif  // HPT_WORKERS_WORKER_METRICS_H_
