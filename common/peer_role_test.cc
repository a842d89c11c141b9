// The role names and URIs; the checks on real certificates are in
// tests/security_integration_test and workers/worker_server_test.
#include "common/peer_role.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(PeerRoleTest, EachRoleHasOneSpiffeUri) {
  EXPECT_EQ(RoleUri(PeerRole::kCoordinator), "spiffe://hpt/coordinator");
  EXPECT_EQ(RoleUri(PeerRole::kGpuWorker), "spiffe://hpt/worker/gpu");
  EXPECT_EQ(RoleUri(PeerRole::kReramWorker), "spiffe://hpt/worker/reram");
  EXPECT_EQ(RoleUri(PeerRole::kSystolicWorker), "spiffe://hpt/worker/systolic");
  EXPECT_EQ(RoleUri(PeerRole::kClient), "spiffe://hpt/client");
  EXPECT_EQ(RoleUri(PeerRole::kUnnamed), "");
  EXPECT_EQ(RoleName(PeerRole::kUnnamed), "no role");
}

TEST(PeerRoleTest, WorkerKindsMapToTheirRoles) {
  EXPECT_EQ(WorkerRole(DeviceKind::gpu), PeerRole::kGpuWorker);
  EXPECT_EQ(WorkerRole(DeviceKind::reram), PeerRole::kReramWorker);
  EXPECT_EQ(WorkerRole(DeviceKind::systolic), PeerRole::kSystolicWorker);
  EXPECT_FALSE(WorkerRole(DeviceKind::DEVICE_KIND_UNSPECIFIED).has_value());
}

}  // namespace
}  // namespace hpt
