// Identity and isolation on real processes: certificates made here by
// deploy/make-certs with Debian's openssl, one per role, a coordinator with
// TLS and bearer tokens, a GPU worker with its role's certificate (mutual
// TLS), hptctl as alice, bob and an admin.
//   - no token: UNAUTHENTICATED; another user's job: PERMISSION_DENIED on
//     status, cancel and export; ListJobs shows a user their own jobs;
//   - a client without the CA cannot connect;
//   - a worker without a certificate of the cluster's CA cannot register,
//     and nothing without one can call a worker;
//   - every process proves its role: a worker's certificate is refused at
//     another worker and at the JobService, a client's at a worker, a GPU
//     worker's when it registers as reram;
//   - the live pages (curl over HTTPS): no token, 401; alice sees her job,
//     bob neither in his list nor by its address; ?token= sets a Secure,
//     HttpOnly cookie; plain HTTP gets no page.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/grpc_setup.h"
#include "common/test_util.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/worker_service.grpc.pb.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ChildProcess;
using testing::RunCommand;
using testing::RunfilePath;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `dir`/pki: the cluster's CA and its role certificates; `dir`/rogue: the
// same from another CA.
void MakePki(const std::string& dir) {
  for (const char* ca : {"/pki", "/rogue"}) {
    absl::Status made = testing::MakeClusterCertificates(dir + ca);
    ASSERT_TRUE(made.ok()) << made;
  }
}

// Flags giving a process the certificate of role folder `role`.
std::string TlsFlags(const std::string& dir, const std::string& role) {
  const std::string at = dir + "/pki/" + role;
  return absl::StrCat(" --tls_cert=", at, "/cert.pem --tls_key=", at, "/key.pem --tls_ca=", at,
                      "/ca.pem");
}

// A gRPC client's credentials: the cluster's CA and, where `role` names a
// folder under `pki`, that role's certificate.
grpc::SslCredentialsOptions Credentials(const std::string& pki, const std::string& role) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = Slurp(pki + "/ca.pem");
  if (!role.empty()) {
    options.pem_private_key = Slurp(pki + "/" + role + "/key.pem");
    options.pem_cert_chain = Slurp(pki + "/" + role + "/cert.pem");
  }
  return options;
}

TEST(SecurityTest, TokensCertificatesAndOwnership) {
  const std::string dir = testing::MakeTempDir("security");
  MakePki(dir);
  {
    std::ofstream tokens(dir + "/tokens");
    tokens << "# users\nalice-token-0123456789 alice\nbob-token-0123456789ab bob\n"
              "ops-token-0123456789abc ops admin\n";
    std::ofstream(dir + "/alice") << "alice-token-0123456789\n";
    std::ofstream(dir + "/bob") << "bob-token-0123456789ab\n";
    std::ofstream(dir + "/ops") << "ops-token-0123456789abc\n";
  }
  auto coordinator = ChildProcess::Start(
      {RunfilePath("coordinator/hpt_coordinator"), "--listen=127.0.0.1:0",
       "--metrics=", "--state_dir=" + dir + "/state", "--port_file=" + dir + "/coordinator.port",
       "--tokens_file=" + dir + "/tokens", "--tls_cert=" + dir + "/pki/coordinator/cert.pem",
       "--tls_key=" + dir + "/pki/coordinator/key.pem", "--tls_ca=" + dir + "/pki/ca.pem",
       "--worker_wait_s=60", "--http=127.0.0.1:0"},
      dir + "/coordinator.log");
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  auto ports = testing::WaitForPortFile(dir + "/coordinator.port", *coordinator, absl::Seconds(60));
  ASSERT_TRUE(ports.ok()) << ports.status();
  const std::string at = absl::StrCat("127.0.0.1:", ports->grpc);
  auto worker = ChildProcess::Start(
      {RunfilePath("workers/main/hpt_worker"), "--kind=gpu", "--listen=127.0.0.1:0", "--metrics=",
       "--threads=1", "--coordinator=" + at, "--tls_cert=" + dir + "/pki/worker-gpu/cert.pem",
       "--tls_key=" + dir + "/pki/worker-gpu/key.pem", "--tls_ca=" + dir + "/pki/ca.pem"},
      dir + "/worker.log");
  ASSERT_TRUE(worker.ok()) << worker.status();

  auto hptctl = [&](const std::string& user, const std::string& args) {
    return RunCommand(absl::StrCat(
        RunfilePath("hptctl/hptctl"), " --coordinator=", at, " --tls_ca=", dir, "/pki/ca.pem",
        user.empty() ? "" : " --token_file=" + dir + "/" + user, " ", args));
  };
  auto submitted = hptctl("alice", "submit --preset=tiny --epochs=1 --mode=full --name=mine --watch");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  EXPECT_THAT(submitted.output, HasSubstr("job-000001"));
  EXPECT_THAT(submitted.output, HasSubstr("succeeded"));

  auto anonymous = hptctl("", "list");
  EXPECT_NE(anonymous.exit_code, 0);
  EXPECT_THAT(anonymous.output, HasSubstr("UNAUTHENTICATED"));
  for (const char* command : {"status job-000001", "cancel job-000001"}) {
    auto bob = hptctl("bob", command);
    EXPECT_EQ(bob.exit_code, 3) << command << ": " << bob.output;
    EXPECT_THAT(bob.output, HasSubstr("PERMISSION_DENIED"));
  }
  auto bob_export = hptctl("bob", "export job-000001 --out=" + dir + "/stolen.pt");
  EXPECT_EQ(bob_export.exit_code, 3) << bob_export.output;
  EXPECT_THAT(bob_export.output, HasSubstr("PERMISSION_DENIED"));
  auto bob_list = hptctl("bob", "list");
  EXPECT_EQ(bob_list.exit_code, 0) << bob_list.output;
  EXPECT_THAT(bob_list.output, Not(HasSubstr("job-000001")));
  auto admin_list = hptctl("ops", "list");
  EXPECT_THAT(admin_list.output, HasSubstr("job-000001"));
  auto alice_export = hptctl("alice", "export job-000001 --out=" + dir + "/mine.pt");
  EXPECT_EQ(alice_export.exit_code, 0) << alice_export.output;

  // Without the CA, TLS to the coordinator fails: nothing is exchanged.
  auto no_ca = RunCommand(absl::StrCat(RunfilePath("hptctl/hptctl"), " --coordinator=", at,
                                       " --token_file=", dir, "/alice list"));
  EXPECT_EQ(no_ca.exit_code, 5) << no_ca.output;
  EXPECT_THAT(no_ca.output, Not(HasSubstr("job-000001")));

  // The JobService refuses a worker's certificate, token or not, and
  // takes a client's.
  auto as_worker = hptctl("alice", "list" + TlsFlags(dir, "worker-reram"));
  EXPECT_EQ(as_worker.exit_code, 3) << as_worker.output;
  EXPECT_THAT(as_worker.output, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(as_worker.output, HasSubstr("worker/reram"));
  auto as_client = hptctl("alice", "list" + TlsFlags(dir, "client"));
  EXPECT_EQ(as_client.exit_code, 0) << as_client.output;
  EXPECT_THAT(as_client.output, HasSubstr("job-000001"));

  // Registration: with the CA but no certificate, refused by the
  // coordinator; with the rogue CA's certificate, refused by TLS; with the
  // cluster's, only a worker certificate of the kind it registers.
  const std::string pki = dir + "/pki";
  auto register_with = [&](const grpc::SslCredentialsOptions& options, DeviceKind::Name kind) {
    auto stub = WorkerRegistry::NewStub(grpc::CreateChannel(at, grpc::SslCredentials(options)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    RegisterWorkerRequest request;
    request.set_address("127.0.0.1:1");
    request.set_kind(kind);
    RegisterWorkerResponse response;
    return stub->RegisterWorker(&context, request, &response);
  };
  const grpc::SslCredentialsOptions no_cert = Credentials(pki, "");
  grpc::Status refused = register_with(no_cert, DeviceKind::gpu);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED) << refused.error_message();
  const grpc::SslCredentialsOptions rogue = Credentials(dir + "/rogue", "worker-gpu");
  EXPECT_FALSE(register_with(rogue, DeviceKind::gpu).ok());
  grpc::Status as_reram = register_with(Credentials(pki, "worker-gpu"), DeviceKind::reram);
  EXPECT_EQ(as_reram.error_code(), grpc::StatusCode::PERMISSION_DENIED) << as_reram.error_message();
  EXPECT_THAT(as_reram.error_message(), HasSubstr("worker/gpu"));
  for (const char* other : {"client", "coordinator"}) {
    EXPECT_EQ(register_with(Credentials(pki, other), DeviceKind::gpu).error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << other;
  }
  grpc::Status as_gpu = register_with(Credentials(pki, "worker-gpu"), DeviceKind::gpu);
  EXPECT_TRUE(as_gpu.ok()) << as_gpu.error_message();

  // The worker itself answers only the coordinator's certificate: not a
  // peer worker's (here its own kind's too), not a client's.
  auto status = hptctl("ops", "status job-000001");
  const size_t w = status.output.find("127.0.0.1:", status.output.find("gpu "));
  ASSERT_NE(w, std::string::npos) << status.output;
  const std::string worker_at = status.output.substr(w, status.output.find(' ', w) - w);
  auto worker_stub = [&](const grpc::SslCredentialsOptions& options) {
    return WorkerService::NewStub(grpc::CreateChannel(worker_at, grpc::SslCredentials(options)));
  };
  auto deadline = [](grpc::ClientContext* context) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  };
  auto info = [&](const grpc::SslCredentialsOptions& options) {
    grpc::ClientContext context;
    deadline(&context);
    WorkerInfo reply;
    return worker_stub(options)->GetInfo(&context, GetInfoRequest(), &reply);
  };
  EXPECT_FALSE(info(no_cert).ok()) << worker_at;
  EXPECT_FALSE(info(rogue).ok());
  for (const char* other : {"worker-reram", "worker-gpu", "client"}) {
    grpc::Status s = info(Credentials(pki, other));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << other << ": " << s.error_message();
  }
  grpc::Status from_coordinator = info(Credentials(pki, "coordinator"));
  EXPECT_TRUE(from_coordinator.ok()) << from_coordinator.error_message();
  // Every kind of call: a peer worker cannot release a job, read its
  // weights or load new ones.
  const grpc::SslCredentialsOptions peer = Credentials(pki, "worker-systolic");
  {
    grpc::ClientContext context;
    deadline(&context);
    ReleaseRequest request;
    request.set_job_id("job-000001");
    ReleaseResponse reply;
    EXPECT_EQ(worker_stub(peer)->Release(&context, request, &reply).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext context;
    deadline(&context);
    SnapshotRequest request;
    request.set_job_id("job-000001");
    auto reader = worker_stub(peer)->Snapshot(&context, request);
    TensorChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext context;
    deadline(&context);
    LoadParametersResponse reply;
    auto writer = worker_stub(peer)->LoadParameters(&context, &reply);
    LoadParametersRequest header;
    header.mutable_header()->set_job_id("job-000002");
    writer->Write(header);
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
}

// The pages of the same kind of coordinator, with curl.
TEST(SecurityTest, LivePagesNeedTlsAndATokenAndShowOwnJobs) {
  const std::string dir = testing::MakeTempDir("pages-security");
  MakePki(dir);
  std::ofstream(dir + "/tokens") << "alice-token-0123456789 alice\nbob-token-0123456789ab bob\n";
  std::ofstream(dir + "/alice") << "alice-token-0123456789\n";
  auto coordinator = ChildProcess::Start(
      {RunfilePath("coordinator/hpt_coordinator"), "--listen=127.0.0.1:0",
       "--metrics=", "--no_state", "--port_file=" + dir + "/coordinator.port",
       "--tokens_file=" + dir + "/tokens", "--tls_cert=" + dir + "/pki/coordinator/cert.pem",
       "--tls_key=" + dir + "/pki/coordinator/key.pem", "--tls_ca=" + dir + "/pki/ca.pem",
       "--http=127.0.0.1:0"},
      dir + "/coordinator.log");
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  auto ports = testing::WaitForPortFile(dir + "/coordinator.port", *coordinator, absl::Seconds(60));
  ASSERT_TRUE(ports.ok()) << ports.status();
  int grpc_port = 0, metrics_port = 0, http_port = 0;
  ASSERT_EQ(std::sscanf(Slurp(dir + "/coordinator.port").c_str(), "grpc=%d metrics=%d http=%d", &grpc_port,
                        &metrics_port, &http_port),
            3);
  // A job for alice (no worker: it waits, which is all the pages need).
  auto submitted = RunCommand(absl::StrCat(
      RunfilePath("hptctl/hptctl"), " --coordinator=127.0.0.1:", grpc_port, " --tls_ca=", dir,
      "/pki/ca.pem --token_file=", dir, "/alice submit --preset=tiny --epochs=1 --name=hers"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  const std::string base = absl::StrCat("https://127.0.0.1:", http_port);
  auto curl = [&](const std::string& args) {
    return RunCommand(absl::StrCat("curl -sS --max-time 20 --cacert ", dir, "/pki/ca.pem ", args));
  };
  auto code = curl("-o /dev/null -w '%{http_code}' " + base + "/");
  EXPECT_EQ(code.output, "401");
  auto alice = curl("-H 'Authorization: Bearer alice-token-0123456789' " + base + "/jobs/job-000001");
  EXPECT_EQ(alice.exit_code, 0) << alice.output;
  EXPECT_THAT(alice.output, HasSubstr("<h1>job-000001 · hers</h1>"));
  auto bob_list = curl("-H 'Authorization: Bearer bob-token-0123456789ab' " + base + "/");
  EXPECT_THAT(bob_list.output, HasSubstr("HpT jobs"));
  EXPECT_THAT(bob_list.output, Not(HasSubstr("job-000001")));
  auto bob_job = curl("-o /dev/null -w '%{http_code}' -H 'Authorization: Bearer bob-token-0123456789ab' " + base +
                      "/jobs/job-000001");
  EXPECT_EQ(bob_job.output, "404");
  auto bad = curl("-o /dev/null -w '%{http_code}' '" + base + "/?token=nobody'");
  EXPECT_EQ(bad.output, "401");
  auto login = curl("-D - -o /dev/null '" + base + "/jobs/job-000001?token=alice-token-0123456789'");
  EXPECT_THAT(login.output, HasSubstr("302"));
  EXPECT_THAT(login.output, HasSubstr("Set-Cookie: hpt_token=alice-token-0123456789; Path=/; HttpOnly; "
                                      "SameSite=Strict; Secure"));
  EXPECT_THAT(login.output, HasSubstr("Location: /jobs/job-000001"));
  auto cookie = curl("-b hpt_token=alice-token-0123456789 " + base + "/");
  EXPECT_THAT(cookie.output, HasSubstr(">job-000001</a>"));
  auto plain = RunCommand(absl::StrCat("curl -sS --max-time 10 http://127.0.0.1:", http_port, "/"));
  EXPECT_THAT(plain.output, Not(HasSubstr("HpT jobs")));
  // No CA: curl refuses the certificate; nothing is served.
  auto no_ca = RunCommand(absl::StrCat("curl -sS --max-time 10 ", base, "/"));
  EXPECT_NE(no_ca.exit_code, 0);
}

}  // namespace
}  // namespace hpt
