// The real binaries on loopback: a coordinator, two GPU workers that
// register with it, and hptctl submitting and watching jobs to the end.
#include <cstdio>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;
using testing::ChildProcess;
using testing::RunCommand;
using testing::RunfilePath;

// "  epoch loss 0.5845 0.1374 0.0712" -> {0.5845, 0.1374, 0.0712}
std::vector<double> EpochLosses(const std::string& output) {
  std::vector<double> losses;
  const size_t at = output.find("epoch loss ");
  if (at == std::string::npos) return losses;
  std::istringstream line(output.substr(at + 11, output.find('\n', at) - at - 11));
  double v;
  while (line >> v) losses.push_back(v);
  return losses;
}

class ClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("cluster"));
    auto coordinator = ChildProcess::Start(
        {RunfilePath("coordinator/hpt_coordinator"), "--listen=127.0.0.1:0",
         "--metrics=127.0.0.1:0", "--port_file=" + *dir_ + "/coordinator.port",
         "--worker_timeout_s=5"},
        *dir_ + "/coordinator.log");
    ASSERT_TRUE(coordinator.ok()) << coordinator.status();
    coordinator_ = new ChildProcess(std::move(*coordinator));
    auto ports = testing::WaitForPortFile(*dir_ + "/coordinator.port",
                                          *coordinator_, absl::Seconds(60));
    ASSERT_TRUE(ports.ok()) << ports.status();
    coordinator_ports_ = *ports;
    for (int i = 0; i < 2; ++i) {
      const std::string name = absl::StrCat("worker", i);
      auto worker = ChildProcess::Start(
          {RunfilePath("workers/hpt_worker"), "--kind=gpu", "--listen=127.0.0.1:0",
           "--metrics=127.0.0.1:0", "--threads=1",
           absl::StrCat("--coordinator=127.0.0.1:", ports->grpc),
           "--port_file=" + *dir_ + "/" + name + ".port"},
          *dir_ + "/" + name + ".log");
      ASSERT_TRUE(worker.ok()) << worker.status();
      workers_[i] = new ChildProcess(std::move(*worker));
      auto wp = testing::WaitForPortFile(*dir_ + "/" + name + ".port",
                                         *workers_[i], absl::Seconds(60));
      ASSERT_TRUE(wp.ok()) << wp.status();
      worker_ports_[i] = *wp;
    }
  }

  static void TearDownTestSuite() {
    for (ChildProcess*& w : workers_) {
      delete w;
      w = nullptr;
    }
    delete coordinator_;
    coordinator_ = nullptr;
  }

  static std::string Hptctl(const std::string& args) {
    return absl::StrCat(RunfilePath("hptctl/hptctl"),
                        " --coordinator=127.0.0.1:", coordinator_ports_.grpc, " ",
                        args);
  }

  static std::string* dir_;
  static ChildProcess* coordinator_;
  static ChildProcess* workers_[2];
  static testing::Ports coordinator_ports_;
  static testing::Ports worker_ports_[2];
};

std::string* ClusterTest::dir_ = nullptr;
ChildProcess* ClusterTest::coordinator_ = nullptr;
ChildProcess* ClusterTest::workers_[2] = {nullptr, nullptr};
testing::Ports ClusterTest::coordinator_ports_;
testing::Ports ClusterTest::worker_ports_[2];

TEST_F(ClusterTest, HptctlTrainsTinyJobToSuccessAndLossFalls) {
  auto result = RunCommand(Hptctl(
      "submit --name=it-tiny --preset=tiny --epochs=3 --stations=8 "
      "--time_steps=256 --watch"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("submitted job-"));
  EXPECT_THAT(result.output, HasSubstr("): succeeded"));
  std::vector<double> losses = EpochLosses(result.output);
  ASSERT_EQ(losses.size(), 3u) << result.output;
  EXPECT_LT(losses[2], 0.8 * losses[0]) << result.output;

  auto list = RunCommand(Hptctl("list --format=json"));
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_THAT(list.output, HasSubstr("\"state\": \"SUCCEEDED\""));
}

TEST_F(ClusterTest, TwoWorkersTrainDataParallel) {
  auto result = RunCommand(Hptctl(
      "submit --name=it-dp --epochs=2 --gpu_workers=2 --batch_size=8 "
      "--stations=8 --time_steps=200 --watch"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("2 gpu worker(s)"));
  std::vector<double> losses = EpochLosses(result.output);
  ASSERT_EQ(losses.size(), 2u) << result.output;
  EXPECT_LT(losses[1], losses[0]);
  // Both workers ran training tasks.
  for (const testing::Ports& p : worker_ports_) {
    auto metrics = testing::HttpGet(p.metrics, "/metrics");
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    EXPECT_THAT(*metrics,
                HasSubstr("hpt_worker_tasks_total{code=\"OK\",kind=\"gpu\","
                          "task=\"backward\"}"));
  }
}

TEST_F(ClusterTest, BadInputIsRejectedAndTheCoordinatorKeepsServing) {
  auto bad = RunCommand(Hptctl("submit --batch_size=-5"));
  EXPECT_EQ(bad.exit_code, 3) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("training.batch_size must be positive, got -5"));

  const std::string csv = *dir_ + "/bad.csv";
  FILE* f = std::fopen(csv.c_str(), "w");
  std::fputs("1,2,3\n4,5,6\n7,x,9\n", f);
  std::fclose(f);
  auto bad_csv = RunCommand(Hptctl("submit --csv=" + csv));
  EXPECT_EQ(bad_csv.exit_code, 3) << bad_csv.output;
  EXPECT_THAT(bad_csv.output, HasSubstr(csv + ":3:2: 'x' is not a finite number"));

  auto missing = RunCommand(Hptctl("status job-424242"));
  EXPECT_EQ(missing.exit_code, 4) << missing.output;
  auto usage = RunCommand(Hptctl("frobnicate"));
  EXPECT_EQ(usage.exit_code, 2) << usage.output;

  auto list = RunCommand(Hptctl("list"));
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_TRUE(coordinator_->Running());
}

TEST_F(ClusterTest, CoordinatorMetricsCountJobsAndWorkers) {
  // Workers register asynchronously and the gauge refreshes every second:
  // wait for the condition, with a deadline.
  absl::StatusOr<std::string> metrics;
  const absl::Time give_up = absl::Now() + absl::Seconds(15);
  do {
    metrics = testing::HttpGet(coordinator_ports_.metrics, "/metrics");
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    if (metrics->find("hpt_workers_up{kind=\"gpu\"} 2") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < give_up);
  EXPECT_THAT(*metrics, HasSubstr("hpt_workers_up{kind=\"gpu\"} 2"));
  EXPECT_THAT(*metrics, HasSubstr("hpt_build_info{component=\"coordinator\""));
}

}  // namespace
}  // namespace hpt
