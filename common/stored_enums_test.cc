#include "common/stored_enums.h"

#include <string>

#include "gtest/gtest.h"
#include "proto/checkpoint.pb.h"
#include "proto/job_service.pb.h"

namespace hpt {
namespace {

// Bytes as a store wrote them before the enums: the value as text
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

TEST(StoredEnumsTest, AJobWrittenWithTextKindsReadsBackAsEnums) {
  Job old;
  SetTextKind(old.mutable_spec()->mutable_placement(), 2, "reram");
  SetTextKind(old.mutable_cost(), 1, "gpu");
  DeviceCost* systolic = old.add_device_costs();
  SetTextKind(systolic, 1, "systolic");
  SetTextKind(systolic->mutable_cost(), 1, "systolic");
  Job job = Reparsed(old);
  ASSERT_EQ(job.spec().placement().head_device(), DeviceKind::DEVICE_KIND_UNSPECIFIED);

  UpgradeStoredEnums(&job);
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

TEST(StoredEnumsTest, ACheckpointsWorkRecordReadsBackAsEnums) {
  CheckpointHeader old;
  for (const char* kind : {"gpu", "reram"}) {
    SetTextKind(old.mutable_work_record()->add_devices(), 2, kind);
  }
  CheckpointHeader checkpoint = Reparsed(old);
  UpgradeStoredEnums(&checkpoint);
  ASSERT_EQ(checkpoint.work_record().devices_size(), 2);
  EXPECT_EQ(checkpoint.work_record().devices(0).kind(), DeviceKind::gpu);
  EXPECT_EQ(checkpoint.work_record().devices(1).kind(), DeviceKind::reram);
}

TEST(StoredEnumsTest, BaselinesWrittenAsTextReadBackAsEnums) {
  Job old;
  SetTextKind(old.mutable_hpt()->mutable_comparison(), 24, "fused");
  CheckpointHeader header;
  SetTextKind(header.mutable_work_record()->add_probes(), 1, "bf16");
  Job job = Reparsed(old);
  CheckpointHeader checkpoint = Reparsed(header);
  UpgradeStoredEnums(&job);
  UpgradeStoredEnums(&checkpoint);
  EXPECT_EQ(job.hpt().comparison().baseline(), GpuBaseline::fused);
  EXPECT_EQ(checkpoint.work_record().probes(0).baseline(), GpuBaseline::bf16);
}

TEST(StoredEnumsTest, PhasesWrittenAsTextOrNumbersReadBackAsEnums) {
  Job old;
  SetTextKind(old.mutable_hpt(), 1, "trial");
  SetTextKind(old.mutable_hpt()->add_dispatch(), 1, "lora");
  CheckpointHeader header;
  SetTextKind(&header, 6, "lora");
  SetTextKind(header.mutable_hpt(), 1, "lora");
  // The controller's phase was a number: 0 full (never written), 1 trial, 2 lora.
  PhaseControllerState* controller = header.mutable_controller();
  controller->GetReflection()->MutableUnknownFields(controller)->AddVarint(1, 1);
  Job job = Reparsed(old);
  CheckpointHeader checkpoint = Reparsed(header);
  UpgradeStoredEnums(&job);
  UpgradeStoredEnums(&checkpoint);
  EXPECT_EQ(job.hpt().phase(), TrainingPhase::trial);
  EXPECT_EQ(job.hpt().dispatch(0).phase(), TrainingPhase::lora);
  EXPECT_EQ(checkpoint.phase(), TrainingPhase::lora);
  EXPECT_EQ(checkpoint.hpt().phase(), TrainingPhase::lora);
  EXPECT_EQ(checkpoint.controller().phase(), TrainingPhase::trial);
  EXPECT_EQ(checkpoint.controller()
                .GetReflection()
                ->GetUnknownFields(checkpoint.controller())
                .field_count(),
            0);
}

TEST(StoredEnumsTest, CostPhasesWrittenAsTextReadBackAsEnums) {
  Job old;
  for (const char* phase : {"full", "switch", "lora-gpu"}) {
    SetTextKind(old.mutable_hpt()->add_phases(), 1, phase);
  }
  CheckpointHeader header;
  SetTextKind(header.mutable_work_record()->add_shapes(), 1, "off-step");
  SetTextKind(header.mutable_work_record()->add_shapes(), 1, "partial");
  SetTextKind(header.mutable_work_record()->add_phases(), 1, "recovery");
  Job job = Reparsed(old);
  CheckpointHeader checkpoint = Reparsed(header);
  UpgradeStoredEnums(&job);
  UpgradeStoredEnums(&checkpoint);
  ASSERT_EQ(job.hpt().phases_size(), 3);
  EXPECT_EQ(job.hpt().phases(0).phase(), CostPhase::full);
  EXPECT_EQ(job.hpt().phases(1).phase(), CostPhase::switch_);
  EXPECT_EQ(job.hpt().phases(2).phase(), CostPhase::lora_gpu);
  EXPECT_EQ(checkpoint.work_record().shapes(0).phase(), CostPhase::off_step);
  EXPECT_EQ(checkpoint.work_record().shapes(1).phase(), CostPhase::partial);
  EXPECT_EQ(checkpoint.work_record().phases(0).phase(), CostPhase::recovery);
}

TEST(StoredEnumsTest, AnEnumAlreadySetWinsAndUnknownTextIsDropped) {
  RecordedDevice both;
  both.set_kind(DeviceKind::systolic);
  SetTextKind(&both, 2, "reram");
  RecordedDevice tpu;
  SetTextKind(&tpu, 2, "tpu");
  RecordedDevice a = Reparsed(both), b = Reparsed(tpu);
  UpgradeStoredEnums(&a);
  UpgradeStoredEnums(&b);
  EXPECT_EQ(a.kind(), DeviceKind::systolic);
  EXPECT_EQ(b.kind(), DeviceKind::DEVICE_KIND_UNSPECIFIED);
  EXPECT_EQ(b.GetReflection()->GetUnknownFields(b).field_count(), 0);
}

}  // namespace
}  // namespace hpt
