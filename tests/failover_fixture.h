// The fixture of the failover tests: a coordinator and workers as real
// processes over loopback gRPC in a folder of the test's own, the job
// calls they make, and the trained parameters they export.
#ifndef HPT_TESTS_FAILOVER_FIXTURE_H_
#define HPT_TESTS_FAILOVER_FIXTURE_H_

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_setup.h"
#include "common/grpc_status.h"
#include "common/tensor_codec.h"
#include "common/test_util.h"
#include "gtest/gtest.h"
#include "proto/job_service.grpc.pb.h"

namespace hpt {

class FailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A folder per test: a port file left by the one before must not be read.
    dir_ = testing::MakeTempDir(
        absl::StrCat("failover-", ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }

  // A failed case prints the end of each process's log: the folder is the
  // test's temporary one, which a CI run does not keep.
  void TearDown() override {
    if (!HasFailure()) return;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().extension() != ".log") continue;
      std::ifstream in(entry.path());
      std::vector<std::string> lines;
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      const size_t from = lines.size() > 40 ? lines.size() - 40 : 0;
      std::cout << "== " << entry.path().filename().string() << " (last " << lines.size() - from
                << " of " << lines.size() << " lines)\n";
      for (size_t i = from; i < lines.size(); ++i) std::cout << lines[i] << "\n";
    }
  }

  void StartCoordinator(const std::string& name, int port = 0) {
    auto c = testing::ChildProcess::Start(
        {testing::RunfilePath("coordinator/hpt_coordinator"),
         absl::StrCat("--listen=127.0.0.1:", port),
         "--metrics=", "--port_file=" + dir_ + "/" + name + ".port",
         "--state_dir=" + dir_ + "/state", "--worker_wait_s=60", "--worker_timeout_s=2"},
        dir_ + "/" + name + ".log");
    ASSERT_TRUE(c.ok()) << c.status();
    auto p = testing::WaitForPortFile(dir_ + "/" + name + ".port", *c, absl::Seconds(60));
    ASSERT_TRUE(p.ok()) << p.status();
    ports_ = *p;
    coordinator_.emplace(std::move(*c));
    stub_ =
        JobService::NewStub(MakeChannel(absl::StrCat("127.0.0.1:", ports_.grpc), TlsCredentials()));
  }

  testing::ChildProcess StartWorker(const std::string& kind, const std::string& name) {
    auto w = testing::ChildProcess::Start(
        {testing::RunfilePath("workers/main/hpt_worker"), "--kind=" + kind, "--listen=127.0.0.1:0",
         "--metrics=", "--threads=1", "--name=" + name,
         absl::StrCat("--coordinator=127.0.0.1:", ports_.grpc)},
        dir_ + "/" + name + ".log");
    EXPECT_TRUE(w.ok()) << w.status();
    return std::move(*w);
  }

  std::string Submit(const std::string& spec_text) {
    grpc::ClientContext context;
    SubmitJobRequest request;
    request.set_spec_text(spec_text);
    Job job;
    absl::Status s = FromGrpcStatus(stub_->SubmitJob(&context, request, &job));
    EXPECT_TRUE(s.ok()) << s;
    return job.job_id();
  }

  Job Get(const std::string& id) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    GetJobRequest request;
    request.set_job_id(id);
    Job job;
    (void)stub_->GetJob(&context, request, &job);
    return job;
  }

  // Polls the job until `done` holds (or `limit` passes: a failure).
  Job WaitUntil(const std::string& id, const std::function<bool(const Job&)>& done,
                absl::Duration limit = absl::Seconds(240)) {
    const absl::Time give_up = absl::Now() + limit;
    Job job;
    while (absl::Now() < give_up) {
      job = Get(id);
      if (done(job)) return job;
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "gave up waiting on " << id << ": " << job.ShortDebugString();
    return job;
  }

  static bool Finished(const Job& j) {
    return j.state() == SUCCEEDED || j.state() == FAILED || j.state() == CANCELLED;
  }

  std::map<std::string, HostTensor> Export(const std::string& id) {
    grpc::ClientContext context;
    ExportModelRequest request;
    request.set_job_id(id);
    auto reader = stub_->ExportModel(&context, request);
    ExportModelChunk message;
    ChunkAssembler assembler;
    while (reader->Read(&message)) {
      if (message.has_chunk()) {
        EXPECT_TRUE(assembler.Add(message.chunk()).ok());
      }
    }
    EXPECT_TRUE(reader->Finish().ok());
    auto params = assembler.Finish();
    EXPECT_TRUE(params.ok()) << params.status();
    return params.ok() ? *params : std::map<std::string, HostTensor>{};
  }

  static double MaxDiff(const std::map<std::string, HostTensor>& a,
                        const std::map<std::string, HostTensor>& b) {
    EXPECT_EQ(a.size(), b.size());
    EXPECT_FALSE(a.empty());
    double worst = 0;
    for (const auto& [name, t] : a) {
      auto it = b.find(name);
      if (it == b.end() || it->second.data.size() != t.data.size()) return INFINITY;
      for (size_t i = 0; i < t.data.size(); ++i) {
        worst = std::max(worst, double(std::abs(t.data[i] - it->second.data[i])));
      }
    }
    return worst;
  }

  std::string dir_;
  testing::Ports ports_;
  std::optional<testing::ChildProcess> coordinator_;
  std::unique_ptr<JobService::Stub> stub_;
};

}  // namespace hpt

#endif  // HPT_TESTS_FAILOVER_FIXTURE_H_
