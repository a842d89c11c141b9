#include "workers/nvml_energy.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

// Where the driver is present the counter opens and never runs backwards;
// without one (CI, this project's CPU machines) Open says why, naming the
// library, and the rest is reported as not run.
TEST(NvmlEnergyTest, OpensTheDriversCounterOrSaysWhyNot) {
  absl::StatusOr<std::unique_ptr<NvmlEnergy>> nvml = NvmlEnergy::Open("");
  if (!nvml.ok()) {
    EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
    EXPECT_FALSE(nvml.status().message().empty());
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

}  // namespace
}  // namespace hpt
