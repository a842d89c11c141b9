#include "common/stored_kinds.h"

#include <string>

#include "gtest/gtest.h"
#include "proto/checkpoint.pb.h"
#include "proto/job_service.pb.h"

namespace hpt {
namespace {

// Bytes as a store written before DeviceKind held them: the kind as text
// in the field number that is now reserved.
template <typename M>
void SetTextKind(M* message, int number, const std::string& kind) {
  message->GetReflection()->MutableUnknownFields(message)->AddLengthDelimited(number, kind);
}

template <typename M>
M Reparsed(const M& message) {
  M out;
  EXPECT_TRUE(out.ParseFromString(message.SerializeAsString()));
  return out;
}

TEST(StoredKindsTest, AJobWrittenWithTextKindsReadsBackAsEnums) {
  Job old;
  SetTextKind(old.mutable_spec()->mutable_placement(), 2, "reram");
  SetTextKind(old.mutable_cost(), 1, "gpu");
  DeviceCost* systolic = old.add_device_costs();
  SetTextKind(systolic, 1, "systolic");
  SetTextKind(systolic->mutable_cost(), 1, "systolic");
  Job job = Reparsed(old);
  ASSERT_EQ(job.spec().placement().head_device(), DeviceKind::DEVICE_KIND_UNSPECIFIED);

  UpgradeStoredKinds(&job);
  EXPECT_EQ(job.spec().placement().head_device(), DeviceKind::reram);
  EXPECT_EQ(job.cost().device_kind(), DeviceKind::gpu);
  EXPECT_EQ(job.device_costs(0).kind(), DeviceKind::systolic);
  EXPECT_EQ(job.device_costs(0).cost().device_kind(), DeviceKind::systolic);
  // The text is gone: written again, the job holds only the enums.
  EXPECT_EQ(job.spec()
                .placement()
                .GetReflection()
                ->GetUnknownFields(job.spec().placement())
                .field_count(),
            0);
}

TEST(StoredKindsTest, ACheckpointsWorkRecordReadsBackAsEnums) {
  CheckpointHeader old;
  for (const char* kind : {"gpu", "reram"}) {
    SetTextKind(old.mutable_work_record()->add_devices(), 2, kind);
  }
  CheckpointHeader checkpoint = Reparsed(old);
  UpgradeStoredKinds(&checkpoint);
  ASSERT_EQ(checkpoint.work_record().devices_size(), 2);
  EXPECT_EQ(checkpoint.work_record().devices(0).kind(), DeviceKind::gpu);
  EXPECT_EQ(checkpoint.work_record().devices(1).kind(), DeviceKind::reram);
}

TEST(StoredKindsTest, AnEnumAlreadySetWinsAndUnknownTextIsDropped) {
  RecordedDevice both;
  both.set_kind(DeviceKind::systolic);
  SetTextKind(&both, 2, "reram");
  RecordedDevice tpu;
  SetTextKind(&tpu, 2, "tpu");
  RecordedDevice a = Reparsed(both), b = Reparsed(tpu);
  UpgradeStoredKinds(&a);
  UpgradeStoredKinds(&b);
  EXPECT_EQ(a.kind(), DeviceKind::systolic);
  EXPECT_EQ(b.kind(), DeviceKind::DEVICE_KIND_UNSPECIFIED);
  EXPECT_EQ(b.GetReflection()->GetUnknownFields(b).field_count(), 0);
}

}  // namespace
}  // namespace hpt
