#include "common/device_kind.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(DeviceKindTest, EveryKindParsesFromItsOwnName) {
  for (DeviceKind::Name kind : kDeviceKinds) {
    absl::StatusOr<DeviceKind::Name> parsed = ParseDeviceKind("--kind", KindName(kind));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_EQ(KindName(DeviceKind::reram), "reram");
  EXPECT_EQ(KindName(DeviceKind::DEVICE_KIND_UNSPECIFIED), "");
  EXPECT_EQ(KindName(DeviceKind::Name(9)), "");
}

TEST(DeviceKindTest, AnUnknownNameIsRefusedNamingTheFieldAndTheKinds) {
  for (const char* bad : {"tpu", "GPU", "", "DEVICE_KIND_UNSPECIFIED"}) {
    absl::StatusOr<DeviceKind::Name> parsed = ParseDeviceKind("--kind", bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(),
              std::string("--kind '") + bad + "' is not gpu, reram or systolic");
  }
}

TEST(DeviceKindTest, AWorkerWithoutAKindIsRefusedListingTheKinds) {
  for (DeviceKind::Name kind : kDeviceKinds) EXPECT_TRUE(CheckWorkerKind(kind).ok()) << kind;
  for (DeviceKind::Name bad : {DeviceKind::DEVICE_KIND_UNSPECIFIED, DeviceKind::Name(9)}) {
    const absl::Status s = CheckWorkerKind(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "a worker needs a kind: gpu, reram or systolic");
  }
}

}  // namespace
}  // namespace hpt
