// Prometheus metric families of the coordinator, built once from the
// registry it is given. Per-job series carry a `job_id` label (`job` is
// Prometheus' scrape-job label); they are removed when the job leaves the
// retained history, so labels stay bounded.
#ifndef HPT_COORDINATOR_JOBS_COORDINATOR_METRICS_H_
#define HPT_COORDINATOR_JOBS_COORDINATOR_METRICS_H_

#include <map>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/job_service.pb.h"

namespace hpt {

struct CoordinatorMetrics {
  explicit CoordinatorMetrics(prometheus::Registry& registry);

  void SetJobCounts(const std::map<JobState, int>& counts);
  void ObserveJob(const Job& job);
  void ForgetJob(const std::string& job_id);
  void ObserveRpc(const std::string& kind, const std::string& method,
                  const std::string& code, double seconds);
  void SetWorkersUp(const std::string& kind, int count);

  prometheus::Family<prometheus::Gauge>& jobs;
  prometheus::Family<prometheus::Counter>& jobs_submitted;
  prometheus::Family<prometheus::Gauge>& job_loss;
  prometheus::Family<prometheus::Gauge>& job_test_loss;
  prometheus::Family<prometheus::Gauge>& job_steps;
  prometheus::Family<prometheus::Gauge>& job_phase;
  prometheus::Family<prometheus::Gauge>& job_samples_per_second;
  prometheus::Family<prometheus::Gauge>& job_device_seconds;
  prometheus::Family<prometheus::Gauge>& job_device_simulated_seconds;
  prometheus::Family<prometheus::Gauge>& job_device_energy;
  prometheus::Family<prometheus::Histogram>& task_latency;
  prometheus::Family<prometheus::Counter>& rpc_errors;
  prometheus::Family<prometheus::Gauge>& workers_up;
  // HpT.
  prometheus::Family<prometheus::Counter>& phase_switches;
  prometheus::Family<prometheus::Counter>& phase_events;
  prometheus::Family<prometheus::Gauge>& job_switch_step;
  // 1 while the job waits for a device worker its placement needs; 1 while
  // its LoRA phase runs on the fallback placement.
  prometheus::Family<prometheus::Gauge>& job_waiting_for_workers;
  prometheus::Family<prometheus::Gauge>& job_on_fallback;
  prometheus::Family<prometheus::Gauge>& job_phase_simulated_seconds;
  prometheus::Family<prometheus::Gauge>& job_phase_energy;
  prometheus::Family<prometheus::Gauge>& job_gpu_only_ratio;
  prometheus::Family<prometheus::Gauge>& job_test_metric;

 private:
  std::map<std::string, int> events_counted_;  // per job
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_JOBS_COORDINATOR_METRICS_H_
