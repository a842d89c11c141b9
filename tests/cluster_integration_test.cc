// The real binaries on loopback: a coordinator, two GPU workers, a ReRAM
// and a systolic worker that register with it, and hptctl submitting,
// watching, reporting and exporting jobs.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/test_util.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/job_service.pb.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
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
         "--worker_timeout_s=5", "--data_root=" + *dir_, "--state_dir=" + *dir_ + "/state"},
        *dir_ + "/coordinator.log");
    ASSERT_TRUE(coordinator.ok()) << coordinator.status();
    coordinator_ = new ChildProcess(std::move(*coordinator));
    auto ports = testing::WaitForPortFile(*dir_ + "/coordinator.port",
                                          *coordinator_, absl::Seconds(60));
    ASSERT_TRUE(ports.ok()) << ports.status();
    coordinator_ports_ = *ports;
    for (int i = 0; i < 4; ++i) {
      const std::string name = absl::StrCat("worker", i);
      const std::string kind = i < 2 ? "gpu" : i == 2 ? "reram" : "systolic";
      auto worker =
          ChildProcess::Start({RunfilePath("workers/main/hpt_worker"), "--kind=" + kind,
                               "--listen=127.0.0.1:0", "--metrics=127.0.0.1:0", "--threads=1",
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
  static ChildProcess* workers_[4];  // gpu, gpu, reram, systolic
  static testing::Ports coordinator_ports_;
  static testing::Ports worker_ports_[4];
};

std::string* ClusterTest::dir_ = nullptr;
ChildProcess* ClusterTest::coordinator_ = nullptr;
ChildProcess* ClusterTest::workers_[4] = {nullptr, nullptr, nullptr, nullptr};
testing::Ports ClusterTest::coordinator_ports_;
testing::Ports ClusterTest::worker_ports_[4];

TEST_F(ClusterTest, HptctlTrainsTinyJobToSuccessAndLossFalls) {
  auto result = RunCommand(Hptctl(
      "submit --name=it-tiny --preset=tiny --epochs=3 --stations=8 "
      "--time_steps=256 --mode=full --watch"));
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
      "--stations=8 --time_steps=200 --mode=full --watch"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("2 gpu worker(s)"));
  std::vector<double> losses = EpochLosses(result.output);
  ASSERT_EQ(losses.size(), 2u) << result.output;
  EXPECT_LT(losses[1], losses[0]);
  // Both workers trained: runs of whole steps on their resident samples.
  for (const testing::Ports& p : {worker_ports_[0], worker_ports_[1]}) {
    auto metrics = testing::HttpGet(p.metrics, "/metrics");
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    EXPECT_THAT(*metrics,
                HasSubstr("hpt_worker_tasks_total{code=\"OK\",kind=\"gpu\","
                          "task=\"train_run\"}"));
  }
}

// A precision: bf16 job through the real processes on the CPU: its
// forward runs under bf16 autocast (products rounded to bf16), so its
// losses are not fp32's bit for bit, yet they follow them and fall.
TEST_F(ClusterTest, ABf16JobTrainsUnderAutocastBesideItsFp32Twin) {
  const std::string job =
      "--preset=tiny --epochs=3 --stations=8 --time_steps=256 --mode=full --seed=7 --watch";
  auto fp32 = RunCommand(Hptctl("submit --name=it-fp32 --precision=fp32 " + job));
  auto bf16 = RunCommand(Hptctl("submit --name=it-bf16 --precision=bf16 " + job));
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  EXPECT_THAT(bf16.output, HasSubstr("): succeeded"));
  const std::vector<double> a = EpochLosses(fp32.output), b = EpochLosses(bf16.output);
  ASSERT_EQ(a.size(), 3u) << fp32.output;
  ASSERT_EQ(b.size(), 3u) << bf16.output;
  EXPECT_LT(b[2], 0.8 * b[0]) << bf16.output;
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    // bf16 keeps 8 bits of mantissa: an epoch's loss moves by well under
    // a tenth, and not by nothing.
    EXPECT_NEAR(b[i], a[i], 0.1 * a[i]) << "epoch " << i;
    differs = differs || b[i] != a[i];
  }
  EXPECT_TRUE(differs) << "the bf16 job's losses equal fp32's: autocast did not run";
  // Its GPU workers ran on this CPU, and the measured-time metric says so
  // (the gauges refresh every second: wait, with a deadline).
  const std::string cpu_gpu = "kind=\"gpu\",ran_on=\"cpu\"}";
  absl::StatusOr<std::string> metrics;
  const absl::Time give_up = absl::Now() + absl::Seconds(15);
  do {
    metrics = testing::HttpGet(coordinator_ports_.metrics, "/metrics");
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    if (metrics->find(cpu_gpu) != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < give_up);
  EXPECT_THAT(*metrics, HasSubstr("hpt_job_device_measured_seconds{"));
  EXPECT_THAT(*metrics, HasSubstr(cpu_gpu));
  EXPECT_THAT(*metrics, Not(HasSubstr("ran_on=\"cuda\"")));
}

// "  cell_writes 12345" style counters come through the JSON report.
double JsonNumber(const std::string& json, const std::string& key, size_t from = 0) {
  const size_t at = json.find("\"" + key + "\": ", from);
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + key.size() + 4, nullptr);
}

TEST_F(ClusterTest, HptJobSwitchesToReramAndSystolicWorkersAndExports) {
  // The paper's rule, so the trial runs on a GPU worker and its t-test
  // decides; small windows and loose thresholds so a short job passes.
  auto result = RunCommand(
      Hptctl("submit --name=it-hpt --preset=tiny --epochs=6 --batch_size=16 --stations=8 "
             "--time_steps=256 --switch_rule=paper --check_window_steps=5 --loss_threshold=0.5 "
             "--weight_threshold=0.5 "
             "--lora_rank=4 --reram_chip_tiles=12 --watch"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string job_id = "job-" + result.output.substr(
      result.output.find("submitted job-") + 14, 6);
  auto report = RunCommand(Hptctl("report " + job_id));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::cout << report.output;  // kept in the test log for reading
  EXPECT_THAT(report.output, HasSubstr("switched to LoRA at step"));
  EXPECT_THAT(report.output, HasSubstr("no difference: switch"));
  EXPECT_THAT(report.output, HasSubstr("HpT vs GPU-only"));
  EXPECT_THAT(report.output, HasSubstr("test metrics"));
  auto json = RunCommand(Hptctl("report " + job_id + " --format=json"));
  ASSERT_EQ(json.exit_code, 0) << json.output;
  // The ReRAM worker: every programmed cell written exactly once, at the
  // switch, and never again however many steps followed.
  Job reported;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = true;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.output, &reported, parse).ok())
      << json.output;
  const DeviceCost* reram = nullptr;
  for (const DeviceCost& d : reported.device_costs()) {
    if (d.kind() == DeviceKind::reram) reram = &d;
  }
  ASSERT_NE(reram, nullptr) << json.output;
  const auto& counters = reram->cost().counters();
  ASSERT_TRUE(counters.contains("max_cell_writes") && counters.contains("cell_writes"))
      << json.output;
  EXPECT_EQ(counters.at("max_cell_writes"), 1.0) << json.output;
  // Tiny preset, 2 layers of d_model 32 (FF x2): per layer q, k, v, o
  // (32x32) and ff1, ff2 (32x64) = 8192 weights; 8-bit weights with an
  // offset in 2-bit cells: 4 cells per weight. A 12-tile chip holds one
  // copy of each of the 12 layers (one tile each) and no more.
  EXPECT_EQ(counters.at("cell_writes"), 2 * 8192 * 4.0) << json.output;
  EXPECT_THAT(report.output, HasSubstr("ReRAM chip: frozen layers and their copies (12 tiles"));
  EXPECT_GT(JsonNumber(json.output, "time_ratio"), 0) << json.output;
  EXPECT_THAT(json.output, HasSubstr("\"phase\": \"lora\""));
  EXPECT_THAT(json.output, HasSubstr("\"kind\": \"systolic\""));

  const std::string model = *dir_ + "/it-hpt.pt";
  auto exported = RunCommand(Hptctl("export " + job_id + " --out=" + model));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_THAT(exported.output, HasSubstr("LoRA merged"));
  FILE* f = std::fopen(model.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::fseek(f, 0, SEEK_END);
  EXPECT_GT(std::ftell(f), 4 * 8192);  // at least the layers' weights
  std::fclose(f);
  // A folder that is not there: one line naming the path, no stack trace.
  auto nowhere = RunCommand(Hptctl("export " + job_id + " --out=/proc/nope/model.pt"));
  EXPECT_NE(nowhere.exit_code, 0) << nowhere.output;
  EXPECT_EQ(nowhere.output,
            "hptctl: FAILED_PRECONDITION: cannot write '/proc/nope/model.pt': folder "
            "'/proc/nope': No such file or "
            "directory\n");
}

TEST_F(ClusterTest, BadInputIsRejectedAndTheCoordinatorKeepsServing) {
  auto bad = RunCommand(Hptctl("submit --batch_size=-5"));
  EXPECT_EQ(bad.exit_code, 3) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("training.batch_size must be in 1..65536, got -5"));

  const std::string csv = *dir_ + "/bad.csv";
  FILE* f = std::fopen(csv.c_str(), "w");
  std::fputs("1,2,3\n4,5,6\n7,x,9\n", f);
  std::fclose(f);
  auto bad_csv = RunCommand(Hptctl("submit --csv=" + csv));
  EXPECT_EQ(bad_csv.exit_code, 3) << bad_csv.output;
  EXPECT_THAT(bad_csv.output, HasSubstr(csv + ":3:2: 'x' is not a number: correct the cell"));

  auto bad_launch = RunCommand(Hptctl("submit --launch=cuda --select=best_validation"));
  EXPECT_EQ(bad_launch.exit_code, 2) << bad_launch.output;
  EXPECT_THAT(bad_launch.output, HasSubstr("--launch 'cuda' is not eager or graph"));

  auto missing = RunCommand(Hptctl("status job-424242"));
  EXPECT_EQ(missing.exit_code, 4) << missing.output;
  auto usage = RunCommand(Hptctl("frobnicate"));
  EXPECT_EQ(usage.exit_code, 2) << usage.output;

  auto list = RunCommand(Hptctl("list"));
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_TRUE(coordinator_->Running());
}

TEST_F(ClusterTest, ServerFilesAndNodesThatBlockAreRefusedAtOnceWithoutTheirContents) {
  // The coordinator reads data only under --data_root (this test's folder).
  const std::string outside = testing::MakeTempDir("outside") + "/secret.csv";
  FILE* f = std::fopen(outside.c_str(), "w");
  std::fputs("TOPSECRET-1234,5\n", f);
  std::fclose(f);
  const std::string fifo = *dir_ + "/pipe.csv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string folder = *dir_ + "/folder.csv";
  ASSERT_EQ(mkdir(folder.c_str(), 0700), 0);
  const std::string link = *dir_ + "/link.csv";  // inside, pointing out
  ASSERT_EQ(symlink(outside.c_str(), link.c_str()), 0);
  struct Case {
    std::string path, message;
  };
  // The refusals are timed against a call that reads no file at all (hptctl
  // starting, connecting, listing), measured here on the same machine, so
  // that a loaded CI machine does not fail them and a blocking read does.
  const auto list_start = std::chrono::steady_clock::now();
  ASSERT_EQ(RunCommand(Hptctl("list")).exit_code, 0);
  const double baseline =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - list_start).count();
  for (const Case& c : std::vector<Case>{
           {"/etc/shadow", "outside the data roots"},
           {"/proc/self/environ", "outside the data roots"},
           {"/dev/zero", "outside the data roots"},
           {outside, "outside the data roots"},
           {link, "outside the data roots"},
           {fifo, "a FIFO, not a regular file"},
           {folder, "a directory, not a regular file"}}) {
    const auto start = std::chrono::steady_clock::now();
    auto result = RunCommand(Hptctl("submit --csv=" + c.path));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(result.exit_code, 3) << c.path << ": " << result.output;
    EXPECT_THAT(result.output, HasSubstr(c.message)) << c.path;
    EXPECT_THAT(result.output, HasSubstr("data.csv: " + c.path)) << c.path;
    EXPECT_THAT(result.output, Not(HasSubstr("TOPSECRET"))) << c.path;
    EXPECT_THAT(result.output, Not(HasSubstr("root:"))) << c.path;
    EXPECT_THAT(result.output, Not(HasSubstr("PATH="))) << c.path;
    EXPECT_LT(seconds, baseline + 1.0)
        << c.path << " took " << seconds << " s; a plain list took " << baseline << " s";
  }
  auto list = RunCommand(Hptctl("list"));
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_TRUE(coordinator_->Running());
}

TEST_F(ClusterTest, ASecondCoordinatorOnAPortInUseFailsNamingIt) {
  const std::string address = absl::StrCat("127.0.0.1:", coordinator_ports_.grpc);
  auto second = RunCommand(absl::StrCat(RunfilePath("coordinator/hpt_coordinator"),
                                        " --listen=", address, " --metrics= --state_dir=", *dir_, "/state2"));
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_THAT(second.output, HasSubstr("cannot listen on '" + address + "'"));
  EXPECT_TRUE(coordinator_->Running());
}

TEST_F(ClusterTest, TheDocumentedSpecFileExampleSubmitsAndTrains) {
  // The spec-file example of docs/jobs.md, verbatim but for the data path.
  std::ifstream readme("docs/jobs.md");
  ASSERT_TRUE(readme) << "docs/jobs.md is a data dependency of this test";
  std::stringstream text;
  text << readme.rdbuf();
  const std::string doc = text.str();
  const size_t intro = doc.find("A spec file looks like:");
  ASSERT_NE(intro, std::string::npos);
  const size_t begin = doc.find("```\n", intro) + 4;
  const size_t end = doc.find("```", begin);
  std::string spec = doc.substr(begin, end - begin);
  const std::string placeholder = "/data/wind/winds.dat";
  ASSERT_NE(spec.find(placeholder), std::string::npos) << spec;
  // 8387 rows like the wind set (5 farms), no header.
  const std::string csv = *dir_ + "/winds.dat";
  FILE* f = std::fopen(csv.c_str(), "w");
  for (int r = 0; r < 8387; ++r) {
    for (int c = 0; c < 5; ++c) {
      std::fprintf(f, "%s%.3f", c ? "," : "", 5 + 3 * std::sin(0.01 * r + c));
    }
    std::fputc('\n', f);
  }
  std::fclose(f);
  spec.replace(spec.find(placeholder), placeholder.size(), csv);
  const std::string spec_file = *dir_ + "/wind-small.textproto";
  f = std::fopen(spec_file.c_str(), "w");
  std::fputs(spec.c_str(), f);
  std::fclose(f);
  auto run = RunCommand(Hptctl("submit --spec=" + spec_file + " --watch"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("(wind-small)"));
  EXPECT_THAT(run.output, HasSubstr("succeeded"));
  // --spec with job flags is refused, naming both.
  auto both = RunCommand(Hptctl("submit --spec=" + spec_file + " --epochs=3"));
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_THAT(both.output, HasSubstr("give either --spec or job flags"));
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
