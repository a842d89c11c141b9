#include "coordinator/coordinator_metrics.h"

#include "absl/strings/ascii.h"

namespace hpt {

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
                             .Help("Measured device time of the job's tasks.")
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
                     .Register(registry)) {}

void CoordinatorMetrics::SetJobCounts(const std::map<JobState, int>& counts) {
  for (JobState state : {QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED}) {
    auto it = counts.find(state);
    jobs.Add({{"state", absl::AsciiStrToLower(JobState_Name(state))}})
        .Set(it == counts.end() ? 0 : it->second);
  }
}

void CoordinatorMetrics::ObserveJob(const Job& job) {
  const prometheus::Labels labels{{"job", job.job_id()}};
  const JobProgress& p = job.progress();
  job_loss.Add(labels).Set(p.loss());
  job_test_loss.Add(labels).Set(p.test_loss());
  job_steps.Add(labels).Set(static_cast<double>(p.step()));
  job_samples_per_second.Add(labels).Set(p.samples_per_s());
  job_phase.Add({{"job", job.job_id()}, {"phase", "full"}})
      .Set(job.state() == RUNNING || job.state() == SUCCEEDED ? 1 : 0);
  std::map<std::string, CostReport> by_kind;
  for (const DeviceCost& d : job.device_costs()) {
    CostReport& c = by_kind[d.kind()];
    c.set_measured_s(c.measured_s() + d.cost().measured_s());
    c.set_simulated_s(c.simulated_s() + d.cost().simulated_s());
    c.set_energy_j(c.energy_j() + d.cost().energy_j());
  }
  for (const auto& [kind, c] : by_kind) {
    const prometheus::Labels l{{"job", job.job_id()}, {"kind", kind}};
    job_device_seconds.Add(l).Set(c.measured_s());
    job_device_simulated_seconds.Add(l).Set(c.simulated_s());
    job_device_energy.Add(l).Set(c.energy_j());
  }
}

void CoordinatorMetrics::ForgetJob(const std::string& job_id) {
  const prometheus::Labels labels{{"job", job_id}};
  for (auto* family : {&job_loss, &job_test_loss, &job_steps,
                       &job_samples_per_second}) {
    family->Remove(&family->Add(labels));
  }
  job_phase.Remove(&job_phase.Add({{"job", job_id}, {"phase", "full"}}));
  for (const char* kind : {"gpu", "reram", "systolic"}) {
    const prometheus::Labels l{{"job", job_id}, {"kind", kind}};
    for (auto* family : {&job_device_seconds, &job_device_simulated_seconds,
                         &job_device_energy}) {
      if (family->Has(l)) family->Remove(&family->Add(l));
    }
  }
}

void CoordinatorMetrics::ObserveRpc(const std::string& method,
                                    const std::string& code, double seconds) {
  task_latency
      .Add({{"kind", "gpu"}, {"task", method}},
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
