// The coordinator's durable registry on real processes: a job submitted to
// a coordinator that is then SIGKILLed is there, under the same id, when a
// new coordinator starts on the same --state_dir; it runs to success once a
// worker registers, and the next job gets a fresh id.
#include <signal.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ChildProcess;
using testing::RunCommand;
using testing::RunfilePath;

ChildProcess StartCoordinator(const std::string& dir, const std::string& name, testing::Ports* ports) {
  auto coordinator = ChildProcess::Start(
      {RunfilePath("coordinator/hpt_coordinator"), "--listen=127.0.0.1:0", "--metrics=", "--http=",
       "--port_file=" + dir + "/" + name + ".port", "--state_dir=" + dir + "/state",
       "--worker_wait_s=120", "--worker_timeout_s=5"},
      dir + "/" + name + ".log");
  EXPECT_TRUE(coordinator.ok()) << coordinator.status();
  auto p = testing::WaitForPortFile(dir + "/" + name + ".port", *coordinator, absl::Seconds(60));
  EXPECT_TRUE(p.ok()) << p.status();
  if (p.ok()) *ports = *p;
  return std::move(*coordinator);
}

std::string Hptctl(const testing::Ports& ports, const std::string& args) {
  return absl::StrCat(RunfilePath("hptctl/hptctl"), " --coordinator=127.0.0.1:", ports.grpc, " ",
                      args);
}

TEST(RestartTest, JobsKeepTheirIdsAndRunAfterTheCoordinatorIsKilled) {
  const std::string dir = testing::MakeTempDir("restart");
  testing::Ports first_ports;
  ChildProcess first = StartCoordinator(dir, "first", &first_ports);
  // No worker yet: the job waits for one.
  auto submitted =
      RunCommand(Hptctl(first_ports, "submit --preset=tiny --epochs=2 --mode=full --name=durable"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  EXPECT_THAT(submitted.output, HasSubstr("job-000001"));
  auto waiting = RunCommand(Hptctl(first_ports, "status job-000001"));
  EXPECT_EQ(waiting.exit_code, 0) << waiting.output;

  ASSERT_EQ(kill(first.pid(), SIGKILL), 0);
  first.Stop();  // reaps it

  testing::Ports second_ports;
  ChildProcess second = StartCoordinator(dir, "second", &second_ports);
  auto worker = ChildProcess::Start(
      {RunfilePath("workers/main/hpt_worker"), "--kind=gpu", "--listen=127.0.0.1:0",
       "--metrics=", "--threads=1", absl::StrCat("--coordinator=127.0.0.1:", second_ports.grpc)},
      dir + "/worker.log");
  ASSERT_TRUE(worker.ok()) << worker.status();

  // Only the gRPC port listens (--metrics= and --http= are off): the c10d store starts
  // with the first data-parallel job, and none has run.
  EXPECT_EQ(testing::ListeningPorts(second.pid()), std::vector<int>{second_ports.grpc});

  auto watched = RunCommand(Hptctl(second_ports, "watch job-000001"));
  EXPECT_EQ(watched.exit_code, 0) << watched.output;
  EXPECT_THAT(watched.output, HasSubstr("durable"));
  EXPECT_THAT(watched.output, HasSubstr("succeeded"));

  auto next = RunCommand(Hptctl(second_ports, "submit --preset=tiny --epochs=1 --mode=full --name=after"));
  ASSERT_EQ(next.exit_code, 0) << next.output;
  EXPECT_THAT(next.output, HasSubstr("job-000002"));  // 1 is never reissued
  auto list = RunCommand(Hptctl(second_ports, "list"));
  EXPECT_THAT(list.output, HasSubstr("job-000001"));
  EXPECT_THAT(list.output, HasSubstr("job-000002"));

  // The GPU worker dies. A job submitted now waits for a live worker (the
  // dead one is out of the pool once a call finds it gone, or when its
  // heartbeats stop), and a cancel ends that wait at once.
  ASSERT_EQ(kill(worker->pid(), SIGKILL), 0);
  worker->Stop();
  auto waiting_job = RunCommand(Hptctl(second_ports, "submit --preset=tiny --epochs=1 --mode=full "
                                                     "--name=patient"));
  ASSERT_EQ(waiting_job.exit_code, 0) << waiting_job.output;
  EXPECT_THAT(waiting_job.output, HasSubstr("job-000003"));
  auto cancelled = RunCommand(Hptctl(second_ports, "cancel job-000003"));
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.output;
  auto patient = RunCommand(Hptctl(second_ports, "watch job-000003"));
  // (If the pool still counted the dead worker live when the job started,
  // its first call failed and a recovery line says so; the job itself is
  // cancelled, not failed.)
  EXPECT_THAT(patient.output, HasSubstr("(patient): cancelled"));
  EXPECT_THAT(patient.output, Not(HasSubstr("UNAVAILABLE")));
  EXPECT_THAT(patient.output, Not(HasSubstr("): failed")));
  // A cancelled job resumes on request; with a worker back it succeeds.
  auto again = ChildProcess::Start(
      {RunfilePath("workers/main/hpt_worker"), "--kind=gpu", "--listen=127.0.0.1:0",
       "--metrics=", "--threads=1", absl::StrCat("--coordinator=127.0.0.1:", second_ports.grpc)},
      dir + "/worker2.log");
  ASSERT_TRUE(again.ok()) << again.status();
  auto resumed = RunCommand(Hptctl(second_ports, "resume job-000003 --watch"));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("resumed job-000003 from step 0"));
  EXPECT_THAT(resumed.output, HasSubstr("succeeded"));
  EXPECT_THAT(resumed.output, HasSubstr("resumed by request"));
  auto resume_again = RunCommand(Hptctl(second_ports, "resume job-000003"));
  EXPECT_EQ(resume_again.exit_code, 3) << resume_again.output;
  EXPECT_THAT(resume_again.output, HasSubstr("only a failed or cancelled job can be resumed"));

  // A second coordinator on the same state folder refuses to start.
  auto clash = RunCommand(absl::StrCat(RunfilePath("coordinator/hpt_coordinator"),
                                       " --listen=127.0.0.1:0 --metrics= --state_dir=", dir,
                                       "/state"));
  EXPECT_EQ(clash.exit_code, 1) << clash.output;
  EXPECT_THAT(clash.output, HasSubstr("in use by another coordinator"));
}

}  // namespace
}  // namespace hpt
