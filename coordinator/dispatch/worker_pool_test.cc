#include "coordinator/dispatch/worker_pool.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

class WorkerPoolTest : public ::testing::Test {
 protected:
  WorkerPoolTest() : pool_(Options()) {}
  WorkerPool::Options Options() {
    WorkerPool::Options o;
    o.liveness_timeout = absl::Seconds(10);
    o.now = [this] { return now_; };
    return o;
  }
  absl::Time now_ = absl::FromUnixSeconds(1000);
  WorkerPool pool_;
};

TEST_F(WorkerPoolTest, RegisteredWorkerExpiresWithoutHeartbeat) {
  ASSERT_TRUE(pool_.Register("127.0.0.1:1", DeviceKind::gpu, "").ok());
  EXPECT_EQ(pool_.Live(DeviceKind::gpu).size(), 1u);
  EXPECT_EQ(pool_.Live(DeviceKind::gpu)[0].name, "gpu@127.0.0.1:1");
  now_ += absl::Seconds(10);
  EXPECT_EQ(pool_.Live(DeviceKind::gpu).size(), 1u);
  now_ += absl::Seconds(1);
  EXPECT_TRUE(pool_.Live(DeviceKind::gpu).empty());
  ASSERT_TRUE(pool_.Register("127.0.0.1:1", DeviceKind::gpu, "").ok());  // heartbeat
  EXPECT_EQ(pool_.Live(DeviceKind::gpu).size(), 1u);
}

TEST_F(WorkerPoolTest, StaticWorkersNeverExpireAndKindsAreSeparate) {
  pool_.AddStatic("127.0.0.1:2", DeviceKind::gpu);
  ASSERT_TRUE(pool_.Register("127.0.0.1:3", DeviceKind::reram, "r").ok());
  now_ += absl::Hours(1);
  EXPECT_EQ(pool_.Live(DeviceKind::gpu).size(), 1u);
  EXPECT_TRUE(pool_.Live(DeviceKind::reram).empty());
  EXPECT_EQ(pool_.All().size(), 2u);
}

TEST_F(WorkerPoolTest, BadRegistrationIsRejected) {
  EXPECT_EQ(pool_.Register("", DeviceKind::gpu, "").code(), absl::StatusCode::kInvalidArgument);
  // A number this coordinator has no name for (a newer worker's kind).
  absl::Status s = pool_.Register("127.0.0.1:1", DeviceKind::Name(9), "");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "RegisterWorkerRequest.kind 9 is not gpu, reram or systolic");
  EXPECT_EQ(pool_.Register("127.0.0.1:1", DeviceKind::DEVICE_KIND_UNSPECIFIED, "").message(),
            "RegisterWorkerRequest.kind 0 is not gpu, reram or systolic");
}

TEST_F(WorkerPoolTest, AWorkerFoundGoneLeavesAtOnceAndReturnsWithItsHeartbeat) {
  ASSERT_TRUE(pool_.Register("127.0.0.1:5", DeviceKind::gpu, "").ok());
  pool_.AddStatic("127.0.0.1:6", DeviceKind::reram);
  now_ += absl::Seconds(1);
  pool_.MarkDown("127.0.0.1:5");
  pool_.MarkDown("127.0.0.1:6");
  EXPECT_TRUE(pool_.Live(DeviceKind::gpu).empty());  // well inside the 10 s timeout
  EXPECT_TRUE(pool_.Live(DeviceKind::reram).empty());
  now_ += absl::Seconds(1);
  ASSERT_TRUE(pool_.Register("127.0.0.1:5", DeviceKind::gpu, "").ok());  // its next heartbeat
  EXPECT_EQ(pool_.Live(DeviceKind::gpu).size(), 1u);
  now_ += absl::Seconds(10);  // a static worker is retried after the timeout
  EXPECT_EQ(pool_.Live(DeviceKind::reram).size(), 1u);
}

TEST_F(WorkerPoolTest, WaitForEndsWhenCancelled) {
  int polls = 0;
  auto result =
      pool_.WaitFor(DeviceKind::gpu, 1, absl::Hours(1), [&polls] { return ++polls == 3; });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(polls, 3);  // checked at every poll, not only at the timeout
  EXPECT_EQ(result.status().message(), "cancelled while waiting for 1 gpu worker(s)");
}

TEST_F(WorkerPoolTest, WaitForReportsWhatIsMissing) {
  pool_.AddStatic("127.0.0.1:2", DeviceKind::gpu);
  auto two = pool_.WaitFor(DeviceKind::gpu, 2, absl::ZeroDuration());
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(two.status().message().find("needs 2 gpu worker(s) but 1"),
            std::string::npos);
  auto one = pool_.WaitFor(DeviceKind::gpu, 1, absl::ZeroDuration());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0].address, "127.0.0.1:2");
}

}  // namespace
}  // namespace hpt
