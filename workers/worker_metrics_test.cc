#include "workers/worker_metrics.h"

#include <string>

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace hpt {
namespace {

std::string Scrape(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

// A job's tasks carry its id while it is resident, and its series leave
// with its release: the label stays bounded to the jobs on the worker.
TEST(WorkerMetricsTest, JobSeriesLiveWhileTheJobIsResident) {
  prometheus::Registry registry;
  WorkerMetrics metrics(registry, "gpu");
  metrics.ObserveJobTask("job-000001", "forward", 0.25);
  metrics.ObserveJobTask("job-000001", "forward", 0.5);
  metrics.ObserveJobTask("job-000002", "update", 1.0);
  std::string text = Scrape(registry);
  EXPECT_NE(text.find("hpt_worker_job_tasks_total{job_id=\"job-000001\",kind=\"gpu\","
                      "task=\"forward\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hpt_worker_job_task_seconds_total{job_id=\"job-000001\",kind=\"gpu\"} "
                      "0.75"),
            std::string::npos)
      << text;
  metrics.ForgetJob("job-000001");
  metrics.ForgetJob("job-000009");  // never seen: nothing happens
  text = Scrape(registry);
  EXPECT_EQ(text.find("job-000001"), std::string::npos) << text;
  EXPECT_NE(text.find("job_id=\"job-000002\""), std::string::npos) << text;
  metrics.ObserveJobTask("", "forward", 1);  // no job: no series
  EXPECT_EQ(Scrape(registry).find("job_id=\"\""), std::string::npos);
}

}  // namespace
}  // namespace hpt
