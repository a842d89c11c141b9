// The coordinator's gRPC surface without workers: bad specs and bad CSV
// files are INVALID_ARGUMENT naming the field or line, and the server keeps
// serving; health checking and reflection answer.
#include <fstream>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "common/grpc_setup.h"
#include "common/grpc_status.h"
#include "common/test_util.h"
#include "coordinator/coordinator_server.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "proto/job_service.grpc.pb.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

class CoordinatorServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CoordinatorServer::Options o;
    o.listen_address = "127.0.0.1:0";
    o.runner.worker_wait = WorkerWait();
    o.jobs.max_load_time = MaxLoadTime();
    auto server = CoordinatorServer::Start(o);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
    stub_ = JobService::NewStub(MakeChannel(address_, TlsCredentials()));
  }

  absl::StatusOr<Job> Submit(const SubmitJobRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    Job job;
    absl::Status s = FromGrpcStatus(stub_->SubmitJob(&context, request, &job));
    if (!s.ok()) return s;
    return job;
  }

  absl::StatusOr<Job> WaitForEnd(const std::string& job_id) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    WatchJobRequest request;
    request.set_job_id(job_id);
    auto reader = stub_->WatchJob(&context, request);
    Job job, last;
    while (reader->Read(&job)) last = job;
    absl::Status s = FromGrpcStatus(reader->Finish());
    if (!s.ok()) return s;
    return last;
  }

  virtual absl::Duration WorkerWait() const { return absl::ZeroDuration(); }
  virtual absl::Duration MaxLoadTime() const { return absl::Seconds(120); }

  std::vector<Job> List() {
    grpc::ClientContext context;
    ListJobsResponse list;
    EXPECT_TRUE(stub_->ListJobs(&context, ListJobsRequest(), &list).ok());
    return {list.jobs().begin(), list.jobs().end()};
  }

  std::unique_ptr<CoordinatorServer> server_;
  std::string address_;
  std::unique_ptr<JobService::Stub> stub_;
};

// Jobs wait an hour for workers here: only a cancel can end the wait.
class PatientCoordinatorTest : public CoordinatorServiceTest {
 protected:
  absl::Duration WorkerWait() const override { return absl::Hours(1); }
};

TEST_F(PatientCoordinatorTest, CancelEndsAJobsWaitForWorkers) {
  SubmitJobRequest request;
  request.mutable_spec()->mutable_hpt()->set_mode(TrainingMode::full);
  auto job = Submit(request);
  ASSERT_TRUE(job.ok()) << job.status();
  // Follow the job until the scheduler has taken it (it then waits for a
  // GPU worker that never comes), then cancel it.
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    WatchJobRequest watch;
    watch.set_job_id(job->job_id());
    auto reader = stub_->WatchJob(&context, watch);
    Job update;
    while (reader->Read(&update) && update.state() != RUNNING) {
    }
    ASSERT_EQ(update.state(), RUNNING);
    context.TryCancel();
    reader->Finish().ok();
  }
  grpc::ClientContext context;
  CancelJobRequest cancel;
  cancel.set_job_id(job->job_id());
  Job cancelled;
  ASSERT_TRUE(stub_->CancelJob(&context, cancel, &cancelled).ok());
  // Without the cancel reaching the wait, this would time out (30 s).
  auto end = WaitForEnd(job->job_id());
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), CANCELLED);
  EXPECT_THAT(end->error(), HasSubstr("cancelled while waiting for 1 gpu worker(s)"));
}

TEST_F(CoordinatorServiceTest, MalformedSpecTextIsRejectedWithItsLine) {
  SubmitJobRequest request;
  request.set_spec_text("name: \"x\"\ntraining {\n  epochs: 2\n  batch_size: [\n}\n");
  auto job = Submit(request);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(job.status().message()), HasSubstr("job spec line 4"));
}

TEST_F(CoordinatorServiceTest, InvalidFieldIsRejectedByName) {
  SubmitJobRequest request;
  request.mutable_spec()->mutable_training()->set_batch_size(-3);
  auto job = Submit(request);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(), "training.batch_size must be in 1..65536, got -3");
}

TEST_F(CoordinatorServiceTest, MalformedCsvIsRejectedWithFileAndLine) {
  const std::string path = testing::MakeTempDir("csv") + "/bad.csv";
  {
    std::ofstream out(path);
    for (int r = 0; r < 30; ++r) out << r << ".5," << r << ",1\n";
    out << "7,8\n";  // line 31 has two columns
  }
  SubmitJobRequest request;
  request.mutable_spec()->mutable_data()->mutable_csv()->set_path(path);
  auto job = Submit(request);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(),
            "data.csv: " + path + ":31: expected 3 columns, got 2");

  // The coordinator keeps serving: a valid job is accepted and listed,
  // after the one whose data did not load (newest first).
  SubmitJobRequest good;
  good.mutable_spec()->set_name("after-errors");
  auto accepted = Submit(good);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(accepted->state(), QUEUED);
  std::vector<Job> jobs = List();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].name(), "after-errors");
  EXPECT_EQ(jobs[1].state(), FAILED);
  EXPECT_EQ(jobs[1].error(),
            "its data did not load: data.csv: " + path + ":31: expected 3 columns, got 2");
}

// A model its data cannot carry is refused in the reply, and the job's
// error says it was the model, not the data.
TEST_F(CoordinatorServiceTest, AModelRefusedAfterItsDataLoadedSaysSo) {
  SubmitJobRequest request;
  request.mutable_spec()->mutable_model()->set_num_heads(3);  // tiny's d_model is 32
  auto job = Submit(request);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(), "model.d_model (32) must be divisible by model.num_heads (3)");
  std::vector<Job> jobs = List();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state(), FAILED);
  EXPECT_EQ(jobs[0].error(),
            "its model was refused: model.d_model (32) must be divisible by model.num_heads (3)");
}

// A full job given the LoRA phase's placement hears that it has no effect,
// once: the note is part of the job's spec.
TEST_F(CoordinatorServiceTest, AFullJobGivenLoraPhaseSettingsIsToldTheyHaveNoEffect) {
  SubmitJobRequest request;
  request.mutable_spec()->mutable_hpt()->set_mode(TrainingMode::full);
  request.mutable_spec()->mutable_hpt()->set_placement(Placement::gpu);
  auto job = Submit(request);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(job->spec().notes(),
              ::testing::Contains("hpt.placement: hpt.mode full trains every parameter to the "
                                  "end, with no LoRA phase, so it has no effect"));
  EXPECT_EQ(
      absl::c_count_if(job->spec().notes(),
                       [](const std::string& n) { return absl::StrContains(n, "no LoRA phase"); }),
      1);
}

TEST_F(CoordinatorServiceTest, AJobIsLoadingUntilItsDataIsInAndACancelStopsTheLoad) {
  const std::string path = testing::MakeTempDir("csv") + "/big.csv";
  {
    std::ofstream out(path);
    for (int r = 0; r < 3'000'000; ++r) out << "1.5,2,1\n";
  }
  SubmitJobRequest request;
  request.mutable_spec()->set_name("big");
  request.mutable_spec()->mutable_data()->mutable_csv()->set_path(path);
  absl::StatusOr<Job> submitted;
  std::thread submitter([&] { submitted = Submit(request); });
  // The job is listed as LOADING while the submit waits for its data.
  std::string loading;
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (loading.empty() && absl::Now() < give_up) {
    for (const Job& job : List()) {
      if (job.state() == LOADING) loading = job.job_id();
    }
  }
  ASSERT_FALSE(loading.empty()) << "never saw the job LOADING";
  grpc::ClientContext context;
  CancelJobRequest cancel;
  cancel.set_job_id(loading);
  Job cancelled;
  ASSERT_TRUE(stub_->CancelJob(&context, cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), CANCELLED);
  submitter.join();
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.status().code(), absl::StatusCode::kCancelled);
  auto end = WaitForEnd(loading);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), CANCELLED);
  EXPECT_EQ(end->error(), "cancelled while its data loaded");
}

// Loading may take no time at all here.
class HastyCoordinatorTest : public CoordinatorServiceTest {
 protected:
  absl::Duration MaxLoadTime() const override { return absl::Nanoseconds(1); }
};

TEST_F(HastyCoordinatorTest, ALoadPastMaxLoadTimeFailsNamingTheFlag) {
  const std::string path = testing::MakeTempDir("csv") + "/slow.csv";
  {
    std::ofstream out(path);
    for (int r = 0; r < 100; ++r) out << r << ",1\n";
  }
  SubmitJobRequest request;
  request.mutable_spec()->mutable_data()->mutable_csv()->set_path(path);
  auto job = Submit(request);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(job.status().message()), HasSubstr("--max_load_s"));
  std::vector<Job> jobs = List();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state(), FAILED);
  EXPECT_THAT(jobs[0].error(), HasSubstr("slow.csv: loading took longer than its time limit"));
}

TEST_F(CoordinatorServiceTest, JobWithoutWorkersFailsWithAClearError) {
  auto job = Submit(SubmitJobRequest());
  ASSERT_TRUE(job.ok()) << job.status();
  auto end = WaitForEnd(job->job_id());
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->state(), FAILED);
  EXPECT_THAT(end->error(), HasSubstr("needs 1 gpu worker(s) but 0"));
}

TEST_F(CoordinatorServiceTest, UnknownJobIsNotFound) {
  grpc::ClientContext context;
  GetJobRequest request;
  request.set_job_id("job-999999");
  Job job;
  grpc::Status s = stub_->GetJob(&context, request, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no job 'job-999999'");
}

TEST_F(CoordinatorServiceTest, SubmitIsIdempotentPerRequestId) {
  SubmitJobRequest request;
  request.set_request_id("abc");
  auto first = Submit(request);
  auto second = Submit(request);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->job_id(), second->job_id());
}

// One unary call with raw request bytes through a generic stub.
grpc::Status RawCall(const std::string& address, const std::string& method,
                     const std::string& bytes, std::string* reply) {
  grpc::GenericStub generic(MakeChannel(address, TlsCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer request(&slice, 1), response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  generic.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      status = s;
                      done = true;
                      cv.notify_one();
                    });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  std::vector<grpc::Slice> slices;
  if (status.ok() && response.Dump(&slices).ok()) {
    for (const auto& s : slices) reply->append(s.begin(), s.end());
  }
  return status;
}

TEST_F(CoordinatorServiceTest, HealthCheckSaysServing) {
  // grpc.health.v1.Health/Check with an empty request; the reply's field 1
  // is the enum SERVING (1), i.e. the bytes 08 01.
  std::string bytes;
  grpc::Status status = RawCall(address_, "/grpc.health.v1.Health/Check", "", &bytes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
}

TEST_F(CoordinatorServiceTest, ARequestThatDoesNotParseIsInvalidArgumentWithAMessage) {
  // Field 1 as a length-delimited string of 200 bytes, with 3 of them there.
  std::string reply;
  grpc::Status status =
      RawCall(address_, "/hpt.JobService/GetJob", std::string("\x0a\xc8\x01" "abc", 6), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "the request to /hpt.JobService/GetJob did not parse as hpt.GetJobRequest (a "
            "protobuf of another type, or damaged bytes)");
  // A method nobody serves stays UNIMPLEMENTED.
  status = RawCall(address_, "/hpt.JobService/NoSuchMethod", "", &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  // And the server keeps serving.
  status = RawCall(address_, "/grpc.health.v1.Health/Check", "", &reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

}  // namespace
}  // namespace hpt
