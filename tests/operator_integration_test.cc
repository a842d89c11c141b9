// What an operator sees from the real binaries: a coordinator that is
// durable with no state flags (its default folder), refusals of malformed
// addresses naming the flag with exit code 2, and one-line client errors.
#include <signal.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/test_util.h"

namespace hpt::testing {
namespace {

using ::testing::HasSubstr;

std::string Coordinator() { return RunfilePath("coordinator/hpt_coordinator"); }
std::string Worker() { return RunfilePath("workers/main/hpt_worker"); }
std::string Hptctl() { return RunfilePath("hptctl/hptctl"); }

TEST(OperatorTest, MalformedAddressesExitTwoNamingTheFlag) {
  struct Case {
    std::string command;
    std::string message;
  };
  const std::vector<Case> cases = {
      {Coordinator() + " --no_state --metrics= --listen=127.0.0.1:99999",
       "--listen '127.0.0.1:99999' has no valid port (0..65535)"},
      {Coordinator() + " --no_state --metrics= --listen=nowhere",
       "--listen 'nowhere' is not host:port"},
      {Coordinator() + " --no_state --listen=127.0.0.1:0 --metrics=127.0.0.1:70000",
       "--metrics '127.0.0.1:70000' has no valid port"},
      {Worker() + " --kind=systolic --metrics= --listen=127.0.0.1:0 "
                  "--coordinator='not a host:port'",
       "--coordinator 'not a host:port' has no valid port"},
      {Worker() + " --kind=systolic --metrics= --listen=127.0.0.1:0 --advertise=host-only",
       "--advertise 'host-only' is not host:port"},
      {Worker() + " --kind=systolic --metrics= --listen=127.0.0.1:65536",
       "--listen '127.0.0.1:65536' has no valid port"},
      {Coordinator() + " --no_state --state_dir=/tmp/x --listen=127.0.0.1:0 --metrics=",
       "--state_dir and --no_state contradict each other"},
      {Hptctl() + " --coordinator=127.0.0.1:99999 list",
       "--coordinator '127.0.0.1:99999' has no valid port (0..65535)"},
  };
  for (const Case& c : cases) {
    const CommandResult run = RunCommand(c.command);
    EXPECT_EQ(run.exit_code, 2) << c.command << "\n" << run.output;
    EXPECT_THAT(run.output, HasSubstr(c.message)) << c.command;
  }
}

TEST(OperatorTest, OutOfRangeNumbersExitTwoNamingTheFlag) {
  // Each would have started a process that fails every job it is given.
  const std::string coordinator = Coordinator() + " --no_state --metrics= --http= " +
                                  "--listen=127.0.0.1:0 ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {coordinator + "--task_deadline_s=0", "--task_deadline_s must be >= 1 and <= 86400, got 0"},
      {coordinator + "--worker_wait_s=-5", "--worker_wait_s must be >= 0 and <= 86400, got -5"},
      {coordinator + "--worker_timeout_s=0", "--worker_timeout_s must be > 0 and <= 86400, got 0"},
      {coordinator + "--max_load_s=nan", "--max_load_s must be > 0 and <= 86400, got nan"},
      {coordinator + "--max_running_jobs=0", "--max_running_jobs must be >= 1"},
      {coordinator + "--max_data_file_mb=-5", "--max_data_file_mb must be >= 1 and <= 8388608, got -5"},
      {coordinator + "--max_data_file_mb=9223372036854775807",
       "--max_data_file_mb must be >= 1 and <= 8388608, got 9.22337203685478e+18"},
      {coordinator + "--max_data_cells=0", "--max_data_cells must be >= 1"},
      {Worker() + " --kind=systolic --metrics= --listen=127.0.0.1:0 --threads=-3",
       "--threads must be 0 (LibTorch's default) to 4096, got -3"},
      {Hptctl() + " --timeout_s=0 list", "--timeout_s must be at least 1 (seconds), got 0"},
  };
  for (const auto& [command, message] : cases) {
    const CommandResult run = RunCommand(command);
    EXPECT_EQ(run.exit_code, 2) << command << "\n" << run.output;
    EXPECT_THAT(run.output, HasSubstr(message)) << command;
  }
}

TEST(OperatorTest, AWorkerThatCannotRegisterSaysWhyOnEveryTryThenExits) {
  // Nothing listens on port 1: every try fails at once.
  const CommandResult run = RunCommand(
      Worker() + " --kind=systolic --metrics= --listen=127.0.0.1:0 "
                 "--coordinator=127.0.0.1:1 --register_timeout_s=2");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("cannot register with coordinator 127.0.0.1:1 (try 1): "));
  EXPECT_THAT(run.output, HasSubstr("(try 2): "));
  // Backing off: the second wait is twice the first.
  EXPECT_THAT(run.output, HasSubstr("next try in 500ms"));
  EXPECT_THAT(run.output, HasSubstr("next try in 1s"));
  EXPECT_THAT(run.output, HasSubstr("no coordinator at 127.0.0.1:1 accepted this worker for "));
  EXPECT_THAT(run.output, HasSubstr("giving up"));
  const CommandResult bad = RunCommand(Worker() + " --kind=systolic --metrics= "
                                                  "--register_timeout_s=-1");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("--register_timeout_s must be a number >= 0, got -1"));
}

// A port nothing listens on now, for a command that must be the same twice.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(OperatorTest, ACoordinatorWithNoStateFlagsResumesItsJobAfterASigkill) {
  const std::string home = MakeTempDir("home");
  const std::string state = home + "/.local/state/hpt";
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  // The same command both times: no state flags, HOME as a user's.
  const std::vector<std::string> command = {
      "/usr/bin/env", "-u", "XDG_STATE_HOME", "HOME=" + home, Coordinator(),
      "--listen=" + address, "--metrics=", "--port_file=" + home + "/c.port",
      "--worker_timeout_s=2"};
  auto first = ChildProcess::Start(command, home + "/first.log");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(WaitForPortFile(home + "/c.port", *first, absl::Seconds(60)).ok());
  auto worker = ChildProcess::Start({Worker(), "--kind=gpu", "--listen=127.0.0.1:0",
                                     "--metrics=", "--threads=1", "--coordinator=" + address},
                                    home + "/worker.log");
  ASSERT_TRUE(worker.ok()) << worker.status();
  const std::string ctl = Hptctl() + " --coordinator=" + address;
  const CommandResult submitted =
      RunCommand(ctl + " submit --mode=full --stations=6 --time_steps=700 --epochs=8 "
                       "--checkpoint_every=10 --format=json");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  EXPECT_THAT(submitted.output, HasSubstr("\"job_id\": \"job-000001\""));
  const CommandResult said = RunCommand("cat " + home + "/first.log");
  EXPECT_THAT(said.output, HasSubstr("state (jobs, checkpoints, trained models) in " + state +
                                     " (the default"));
  // Mid-job: past a checkpoint, far from the end.
  for (int i = 0; i < 600; ++i) {
    const CommandResult status = RunCommand(ctl + " status job-000001 --format=json");
    if (status.output.find("\"checkpoint_step\"") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(kill(first->pid(), SIGKILL), 0);
  first->Stop();
  std::remove((home + "/c.port").c_str());

  auto second = ChildProcess::Start(command, home + "/second.log");
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(WaitForPortFile(home + "/c.port", *second, absl::Seconds(60)).ok());
  const CommandResult watched = RunCommand(ctl + " watch job-000001");
  EXPECT_EQ(watched.exit_code, 0) << watched.output;
  const CommandResult status = RunCommand(ctl + " status job-000001 --format=json");
  EXPECT_THAT(status.output, HasSubstr("\"state\": \"SUCCEEDED\""));
  EXPECT_THAT(status.output, HasSubstr("the coordinator restarted"));
  const CommandResult next = RunCommand(ctl + " submit --stations=4 --time_steps=64");
  ASSERT_EQ(next.exit_code, 0) << next.output;
  EXPECT_THAT(next.output, HasSubstr("submitted job-000002"));
}

TEST(OperatorTest, ARefusedDataFileSaysHowToWidenTheRootsAsStarted) {
  const std::string dir = MakeTempDir("roots");
  std::ofstream(dir + "/outside.csv") << "1,2\n3,4\n";
  const std::string hint = "to read it, ask the lab's admin";
  for (const std::string& given : {std::string(), hint}) {
    std::remove((dir + "/c.port").c_str());
    std::vector<std::string> argv = {Coordinator(), "--no_state", "--listen=127.0.0.1:0",
                                     "--metrics=", "--port_file=" + dir + "/c.port",
                                     "--data_root=" + dir + "/inside"};
    if (!given.empty()) argv.push_back("--data_root_hint=" + given);
    auto c = ChildProcess::Start(argv, dir + "/c.log");
    ASSERT_TRUE(c.ok()) << c.status();
    auto ports = WaitForPortFile(dir + "/c.port", *c, absl::Seconds(60));
    ASSERT_TRUE(ports.ok()) << ports.status();
    const CommandResult run = RunCommand(absl::StrCat(
        Hptctl(), " --coordinator=127.0.0.1:", ports->grpc, " submit --csv=", dir,
        "/outside.csv"));
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, HasSubstr("outside the data roots"));
    EXPECT_THAT(run.output,
                HasSubstr(given.empty() ? "start the coordinator with --data_root=DIR" : hint));
  }
}

TEST(OperatorTest, NoStateIsSaidLoudly) {
  const std::string dir = MakeTempDir("nostate");
  auto c = ChildProcess::Start({Coordinator(), "--no_state", "--listen=127.0.0.1:0",
                                "--metrics=", "--port_file=" + dir + "/c.port"},
                               dir + "/c.log");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(WaitForPortFile(dir + "/c.port", *c, absl::Seconds(60)).ok());
  const CommandResult log = RunCommand("cat " + dir + "/c.log");
  EXPECT_THAT(log.output, HasSubstr("WARNING: --no_state: jobs, checkpoints and trained models "
                                    "are kept in memory only"));
}

}  // namespace
}  // namespace hpt::testing
