// What an operator sees from the real binaries: a coordinator that is
// durable with no state flags (its default folder), refusals of malformed
// addresses naming the flag with exit code 2, and one-line client errors.
#include <signal.h>

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/test_util.h"

namespace hpt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Coordinator() { return RunfilePath("coordinator/hpt_coordinator"); }
std::string Worker() { return RunfilePath("workers/hpt_worker"); }
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
  };
  for (const Case& c : cases) {
    const CommandResult run = RunCommand(c.command);
    EXPECT_EQ(run.exit_code, 2) << c.command << "\n" << run.output;
    EXPECT_THAT(run.output, HasSubstr(c.message)) << c.command;
  }
}

TEST(OperatorTest, ACoordinatorWithNoStateFlagsKeepsItsJobsInItsDefaultFolder) {
  const std::string home = MakeTempDir("home");
  const std::string state = home + "/.local/state/hpt";
  // The same command both times: no state flags, HOME as a user's.
  auto start = [&](const std::string& log) {
    return ChildProcess::Start(
        {"/usr/bin/env", "-u", "XDG_STATE_HOME", "HOME=" + home, Coordinator(),
         "--listen=127.0.0.1:0", "--metrics=", "--port_file=" + home + "/c.port"},
        home + "/" + log);
  };
  auto first = start("first.log");
  ASSERT_TRUE(first.ok()) << first.status();
  auto ports = WaitForPortFile(home + "/c.port", *first, absl::Seconds(60));
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string ctl = absl::StrCat(Hptctl(), " --coordinator=127.0.0.1:", ports->grpc);
  // No worker registers: the job waits, queued, as a long job would train.
  const CommandResult submitted = RunCommand(ctl + " submit --stations=4 --time_steps=64");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  EXPECT_THAT(submitted.output, HasSubstr("submitted job-000001"));
  const CommandResult said = RunCommand("cat " + home + "/first.log");
  EXPECT_THAT(said.output, HasSubstr("state (jobs, checkpoints, trained models) in " + state +
                                     " (the default"));
  kill(first->pid(), SIGKILL);
  first->Stop();
  std::remove((home + "/c.port").c_str());

  auto second = start("second.log");
  ASSERT_TRUE(second.ok()) << second.status();
  ports = WaitForPortFile(home + "/c.port", *second, absl::Seconds(60));
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string ctl2 = absl::StrCat(Hptctl(), " --coordinator=127.0.0.1:", ports->grpc);
  const CommandResult status = RunCommand(ctl2 + " status job-000001");
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.output, Not(HasSubstr("no job")));
  const CommandResult next = RunCommand(ctl2 + " submit --stations=4 --time_steps=64");
  ASSERT_EQ(next.exit_code, 0) << next.output;
  EXPECT_THAT(next.output, HasSubstr("submitted job-000002"));
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
