#include "coordinator/jobs/job_store.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

std::string FreshDir(const std::string& name) {
  std::string base = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                     "/" + name + "XXXXXX";
  EXPECT_NE(mkdtemp(base.data()), nullptr);
  return base + "/state";  // Open creates it
}

Job MakeJob(const std::string& id, JobState state) {
  Job job;
  job.set_job_id(id);
  job.set_name("n-" + id);
  job.set_state(state);
  job.mutable_spec()->mutable_training()->set_epochs(7);
  return job;
}

TEST(JobStoreTest, JobsAndTheIdCounterSurviveReopening) {
  const std::string dir = FreshDir("store");
  {
    auto store = JobStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ(*(*store)->NextJobNumber(), 1);
    EXPECT_EQ(*(*store)->NextJobNumber(), 2);
    ASSERT_TRUE((*store)->Put(MakeJob("job-000001", SUCCEEDED)).ok());
    ASSERT_TRUE((*store)->Put(MakeJob("job-000002", RUNNING)).ok());
    Job updated = MakeJob("job-000002", RUNNING);
    updated.mutable_progress()->set_step(42);
    ASSERT_TRUE((*store)->Put(updated).ok());  // replaces, not duplicates
  }
  auto store = JobStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*(*store)->NextJobNumber(), 3);  // never reissues 1 or 2
  auto jobs = (*store)->LoadAll();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].job_id(), "job-000001");
  EXPECT_EQ((*jobs)[0].state(), SUCCEEDED);
  EXPECT_EQ((*jobs)[0].spec().training().epochs(), 7);
  EXPECT_EQ((*jobs)[1].progress().step(), 42);
  ASSERT_TRUE((*store)->Remove("job-000001").ok());
  EXPECT_EQ((*store)->LoadAll()->size(), 1u);
}

// A store written before device kinds were an enum held them as text in
// fields now reserved: placement.head_device (2), DeviceCost.kind (1) and
// RecordedDevice.kind (2). Reopened, the job and its record read as enums.
TEST(JobStoreTest, KindsStoredAsTextReadBackAsEnums) {
  const std::string dir = FreshDir("kinds");
  {
    auto store = JobStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    Job job = MakeJob("job-000001", SUCCEEDED);
    auto text = [](google::protobuf::Message* m, int number, const char* kind) {
      m->GetReflection()->MutableUnknownFields(m)->AddLengthDelimited(number, kind);
    };
    text(job.mutable_spec()->mutable_placement(), 2, "systolic");
    text(job.add_device_costs(), 1, "reram");
    ASSERT_TRUE((*store)->Put(job).ok());
    WorkRecord record;
    text(record.add_devices(), 2, "gpu");
    ASSERT_TRUE((*store)->PutWorkRecord("job-000001", record).ok());
  }
  auto store = JobStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadAll();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].spec().placement().head_device(), DeviceKind::systolic);
  EXPECT_EQ((*jobs)[0].device_costs(0).kind(), DeviceKind::reram);
  auto record = (*store)->GetWorkRecord("job-000001");
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->devices(0).kind(), DeviceKind::gpu);
}

TEST(JobStoreTest, OneCoordinatorPerStateFolder) {
  const std::string dir = FreshDir("lock");
  auto first = JobStore::Open(dir);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = JobStore::Open(dir);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()), ::testing::HasSubstr("in use by another"));
  first->reset();
  EXPECT_TRUE(JobStore::Open(dir).ok());  // released with the first
}

TEST(JobStoreTest, AStateFolderThatCannotBeCreatedIsANamedError) {
  auto store = JobStore::Open("/proc/hpt-cannot-exist/state");
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()),
              ::testing::HasSubstr("--state_dir '/proc/hpt-cannot-exist/state'"));
}

}  // namespace
}  // namespace hpt
