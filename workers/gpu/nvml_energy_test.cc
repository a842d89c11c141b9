#include "workers/gpu/nvml_energy.h"

#include "common/test_util.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

// The stand-in driver (nvml_stand_in.cc): one GPU with this UUID and name,
// whose counter advances 250 mJ a read from 1 kJ.
constexpr char kStandInUuid[] = "GPU-5e7a0c1d-0000-4000-8000-000000000001";

std::string StandIn(const std::string& variant) {
  return testing::RunfilePath("workers/gpu/lib" + variant + ".so");
}

// Where the driver is present the counter opens and never runs backwards;
// without one (CI, this project's CPU machines) Open says why, naming the
// library, and the rest is reported as not run. The tests after it are
// its CPU twin, against the stand-in library.
TEST(NvmlEnergyTest, OpensTheDriversCounterOrSaysWhyNot) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml = NvmlEnergy::Open("");
  if (!nvml.ok()) {
    EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
    EXPECT_NE(nvml.status().message().find(kNvmlLibrary), std::string::npos)
        << nvml.status().message();
    GTEST_SKIP() << "not run: " << nvml.status().message();
  }
  const double a = (*nvml)->TotalJ();
  const double b = (*nvml)->TotalJ();
  EXPECT_GT(a, 0);
  EXPECT_GE(b, a);
  EXPECT_FALSE((*nvml)->name().empty());
}

TEST(NvmlEnergyTest, AnUnknownUuidIsNotFound) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml =
      NvmlEnergy::Open("GPU-00000000-0000-0000-0000-000000000000");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
}

TEST(NvmlEnergyStandInTest, ReadsTheCounterByUuidInJoules) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml =
      NvmlEnergy::Open(kStandInUuid, 0, StandIn("nvml_stand_in"));
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  EXPECT_EQ((*nvml)->name(), "NVML stand-in GPU");
  const double a = (*nvml)->TotalJ();
  const double b = (*nvml)->TotalJ();
  EXPECT_GT(a, 1000.0);  // millijoules read as joules: 1 kJ and more
  EXPECT_LT(a, 1100.0);
  EXPECT_DOUBLE_EQ(b - a, 0.25);  // one read's 250 mJ
}

TEST(NvmlEnergyStandInTest, OpensByIndexWhenNoUuidIsGiven) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml =
      NvmlEnergy::Open("", 0, StandIn("nvml_stand_in"));
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  EXPECT_EQ((*nvml)->name(), "NVML stand-in GPU");
}

TEST(NvmlEnergyStandInTest, AMissingGpuIsNamedWithTheDriversCode) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> by_uuid =
      NvmlEnergy::Open("GPU-00000000-0000-0000-0000-000000000000", 0, StandIn("nvml_stand_in"));
  ASSERT_FALSE(by_uuid.ok());
  EXPECT_EQ(by_uuid.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(by_uuid.status().message(),
            "NVML has no GPU GPU-00000000-0000-0000-0000-000000000000 (NVML error 6, not found)");
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> by_index =
      NvmlEnergy::Open("", 3, StandIn("nvml_stand_in"));
  ASSERT_FALSE(by_index.ok());
  EXPECT_EQ(by_index.status().message(), "NVML has no GPU 3 (NVML error 2, invalid argument)");
}

TEST(NvmlEnergyStandInTest, AGpuWithoutACounterSaysSo) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml =
      NvmlEnergy::Open(kStandInUuid, 0, StandIn("nvml_stand_in_no_counter"));
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(nvml.status().message(),
            "this GPU has no energy counter (NVML error 3, not supported)");
}

TEST(NvmlEnergyStandInTest, AFailedInitNamesTheDriversCode) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml =
      NvmlEnergy::Open("", 0, StandIn("nvml_stand_in_init_fails"));
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().message(), "nvmlInit failed (NVML error 9, driver not loaded)");
}

TEST(NvmlEnergyStandInTest, ALibraryWithoutTheCounterFunctionIsNamed) {
  const std::string library = StandIn("nvml_stand_in_no_function");
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml = NvmlEnergy::Open("", 0, library);
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().message(), library + " lacks the energy counter's functions");
}

TEST(NvmlEnergyStandInTest, NoLibraryAtAPathIsNamed) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml =
      NvmlEnergy::Open("", 0, "/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(nvml.status().message(), "no NVIDIA driver library (/nonexistent/libnvidia-ml.so.1)");
}

// Two libraries in one process keep their own functions: a counter opened
// from one reads through it, not through the last one loaded.
TEST(NvmlEnergyStandInTest, EachLibraryKeepsItsOwnFunctions) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> whole =
      NvmlEnergy::Open(kStandInUuid, 0, StandIn("nvml_stand_in"));
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_FALSE(NvmlEnergy::Open(kStandInUuid, 0, StandIn("nvml_stand_in_no_counter")).ok());
  EXPECT_GT((*whole)->TotalJ(), 1000.0);
}

TEST(NvmlErrorTextTest, NamesKnownCodesAndKeepsOthersAsNumbers) {
  EXPECT_EQ(NvmlErrorText(3), "3, not supported");
  EXPECT_EQ(NvmlErrorText(999), "999, unknown");
  EXPECT_EQ(NvmlErrorText(27), "27");
}

}  // namespace
}  // namespace hpt
