#include "workers/worker_metrics.h"

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
                        .Add({{"kind", kind_in}})) {}

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
