#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_setup.h"
#include "common/test_util.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "proto/health.grpc.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "workers/main/worker_backend.h"

namespace hpt {
namespace {

// A coordinator's registry that answers every registration with a chosen
// heartbeat interval and counts them.
class FakeRegistry final : public WorkerRegistry::CallbackService {
 public:
  explicit FakeRegistry(double interval_s) : interval_s_(interval_s) {}

  grpc::ServerUnaryReactor* RegisterWorker(grpc::CallbackServerContext* context,
                                           const RegisterWorkerRequest* request,
                                           RegisterWorkerResponse* response) override {
    {
      absl::MutexLock lock(&mu_);
      ++registrations_;
      kind_ = request->kind();
    }
    response->set_heartbeat_interval_s(interval_s_);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  // Waits (bounded) for `n` registrations; false if they did not come.
  bool AwaitRegistrations(int n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return registrations_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), absl::Seconds(30));
  }
  DeviceKind::Name kind() {
    absl::MutexLock lock(&mu_);
    return kind_;
  }

 private:
  const double interval_s_;
  absl::Mutex mu_;
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  DeviceKind::Name kind_ ABSL_GUARDED_BY(mu_) = DeviceKind::DEVICE_KIND_UNSPECIFIED;
};

class WorkerServerTest : public ::testing::Test {
 protected:
  void StartRegistry(double interval_s) {
    registry_ = std::make_unique<FakeRegistry>(interval_s);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(registry_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }
  // A worker of `kind` registering with the fake registry every 40 ms
  // until told otherwise.
  std::unique_ptr<WorkerServer> StartWorker(DeviceKind::Name kind) {
    WorkerServer::Options options;
    options.kind = kind;
    options.coordinator_address = "127.0.0.1:" + std::to_string(port_);
    options.heartbeat_interval = absl::Milliseconds(40);
    absl::StatusOr<std::unique_ptr<WorkerServer>> worker =
        hpt::StartWorker(options, WorkerBackendOptions());
    EXPECT_TRUE(worker.ok()) << worker.status();
    return worker.ok() ? std::move(*worker) : nullptr;
  }

  std::unique_ptr<FakeRegistry> registry_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(WorkerServerTest, KeepsTheHeartbeatIntervalTheCoordinatorGives) {
  StartRegistry(/*interval_s=*/0.25);
  std::unique_ptr<WorkerServer> worker = StartWorker(DeviceKind::systolic);
  ASSERT_NE(worker, nullptr);
  ASSERT_TRUE(registry_->AwaitRegistrations(1));
  EXPECT_EQ(registry_->kind(), DeviceKind::systolic);
  // The answer is taken before the next beat is waited for; the second
  // registration proves the first answer was read.
  ASSERT_TRUE(registry_->AwaitRegistrations(2));
  EXPECT_EQ(worker->heartbeat_interval(), absl::Milliseconds(250));
  worker->Shutdown();
}

TEST_F(WorkerServerTest, KeepsItsOwnIntervalWhenTheCoordinatorGivesNone) {
  StartRegistry(/*interval_s=*/0);
  std::unique_ptr<WorkerServer> worker = StartWorker(DeviceKind::reram);
  ASSERT_NE(worker, nullptr);
  ASSERT_TRUE(registry_->AwaitRegistrations(2));
  EXPECT_EQ(worker->heartbeat_interval(), absl::Milliseconds(40));
  worker->Shutdown();
}

// Whether a health check of `port` over a channel with `tls` answers.
bool Answers(int port, const TlsCredentials& tls) {
  auto stub = grpc::health::v1::Health::NewStub(
      MakeChannel(absl::StrCat("localhost:", port), tls));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  return stub->Check(&context, request, &response).ok();
}

// A WorkerService call to `port` over a channel with `tls`.
grpc::Status GetInfo(int port, const TlsCredentials& tls) {
  auto stub = WorkerService::NewStub(MakeChannel(absl::StrCat("localhost:", port), tls));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  WorkerInfo reply;
  return stub->GetInfo(&context, GetInfoRequest(), &reply);
}

TEST_F(WorkerServerTest, OneProcessServesTlsAndPlaintextSideBySide) {
  // Credentials are each server's option, not the process's: a worker with
  // the cluster's certificate (made here with Debian's openssl) and a
  // plaintext worker run in one process, each answering only its own kind
  // of client.
  const std::string dir = testing::MakeTempDir("worker-tls");
  ASSERT_TRUE(testing::MakeClusterCertificates(dir).ok());
  absl::StatusOr<TlsCredentials> cluster = LoadTls(
      {dir + "/worker-systolic/cert.pem", dir + "/worker-systolic/key.pem", dir + "/ca.pem"}, true);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<TlsCredentials> coordinator = LoadTls(
      {dir + "/coordinator/cert.pem", dir + "/coordinator/key.pem", dir + "/ca.pem"}, false);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();

  WorkerServer::Options secure_options;
  secure_options.kind = DeviceKind::systolic;
  secure_options.tls = *cluster;
  absl::StatusOr<std::unique_ptr<WorkerServer>> secure =
      hpt::StartWorker(secure_options, WorkerBackendOptions());
  ASSERT_TRUE(secure.ok()) << secure.status();
  WorkerServer::Options plain_options;
  plain_options.kind = DeviceKind::systolic;
  absl::StatusOr<std::unique_ptr<WorkerServer>> plain =
      hpt::StartWorker(plain_options, WorkerBackendOptions());
  ASSERT_TRUE(plain.ok()) << plain.status();

  EXPECT_TRUE(Answers((*secure)->port(), *coordinator));
  EXPECT_FALSE(Answers((*secure)->port(), TlsCredentials()));
  EXPECT_TRUE(Answers((*plain)->port(), TlsCredentials()));
  EXPECT_FALSE(Answers((*plain)->port(), *coordinator));
  // The health service answers any certificate of the cluster (Kubernetes
  // and compose probe with the process's own); the WorkerService only the
  // coordinator's.
  EXPECT_TRUE(Answers((*secure)->port(), *cluster));
  EXPECT_TRUE(GetInfo((*secure)->port(), *coordinator).ok());
  const grpc::Status peer = GetInfo((*secure)->port(), *cluster);
  EXPECT_EQ(peer.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(peer.error_message().find("worker/systolic"), std::string::npos)
      << peer.error_message();
  (*secure)->Shutdown();
  (*plain)->Shutdown();
}

TEST(LoadTlsTest, NamesTheFlagOfAFileThatIsNotPem) {
  absl::StatusOr<TlsCredentials> bad = LoadTls({"", "", "/proc/self/status"}, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--tls_ca"), std::string::npos) << bad.status();
  EXPECT_EQ(bad.status().message().find("VmRSS"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace hpt
