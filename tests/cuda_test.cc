// CUDA support: linked everywhere, used where a GPU is.
//   - LibTorch's CUDA libraries are loaded (linked --no-as-needed), so the
//     same binary uses a GPU when one is present;
//   - torch::cuda::is_available() says whether this machine has one (the
//     NVIDIA driver's /dev/nvidiactl), false on CI;
//   - with a GPU, a job runs end to end on a worker with --device=cuda:0.
//     Without one that test is skipped and reported as not run.
#include <torch/torch.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;
using testing::ChildProcess;
using testing::RunCommand;
using testing::RunfilePath;

bool MachineHasNvidiaGpu() { return access("/dev/nvidiactl", F_OK) == 0; }

TEST(CudaSupportTest, LibTorchsCudaLibrariesAreLoaded) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("/libtorch_cuda.so"));
  EXPECT_THAT(text.str(), HasSubstr("/libc10_cuda.so"));
}

TEST(CudaSupportTest, CudaIsAvailableExactlyWhereAGpuIs) {
  EXPECT_EQ(torch::cuda::is_available(), MachineHasNvidiaGpu());
  if (!torch::cuda::is_available()) EXPECT_EQ(torch::cuda::device_count(), 0);
}

TEST(CudaSmokeTest, AJobRunsEndToEndOnCuda0) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "not run: no CUDA device on this machine";
  }
  const std::string dir = testing::MakeTempDir("cuda");
  auto coordinator = ChildProcess::Start(
      {RunfilePath("coordinator/hpt_coordinator"), "--listen=127.0.0.1:0",
       "--metrics=127.0.0.1:0", "--port_file=" + dir + "/coordinator.port"},
      dir + "/coordinator.log");
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  auto ports = testing::WaitForPortFile(dir + "/coordinator.port", *coordinator,
                                        absl::Seconds(60));
  ASSERT_TRUE(ports.ok()) << ports.status();
  auto worker = ChildProcess::Start(
      {RunfilePath("workers/hpt_worker"), "--kind=gpu", "--device=cuda:0",
       "--listen=127.0.0.1:0", "--metrics=127.0.0.1:0",
       absl::StrCat("--coordinator=127.0.0.1:", ports->grpc),
       "--port_file=" + dir + "/worker.port"},
      dir + "/worker.log");
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_TRUE(testing::WaitForPortFile(dir + "/worker.port", *worker, absl::Seconds(60)).ok());
  auto result = RunCommand(absl::StrCat(
      RunfilePath("hptctl/hptctl"), " --coordinator=127.0.0.1:", ports->grpc,
      " submit --name=cuda-smoke --preset=tiny --epochs=2 --stations=8 --time_steps=256"
      " --mode=full --watch"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("): succeeded"));
  EXPECT_THAT(result.output, HasSubstr("cuda:0"));
}

}  // namespace
}  // namespace hpt
