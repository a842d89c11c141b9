#include "coordinator/training/cost_ledger.h"

#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using Chain = CostLedger::Chain;

FinishedTask GpuTask(const std::string& worker, const std::string& type, double s, double j,
                     const std::string& op) {
  CostReport cost;
  cost.set_measured_s(s);
  cost.set_measured_j(j);
  cost.mutable_work()->add_kernels()->set_op(op);
  return MakeFinishedTask(worker, DeviceKind::gpu, type, cost, 64);
}

// One step's tasks, recorded as a run's first step records them: the main
// chain (two ranks), then the trial's on the first rank.
void RecordStep(CostLedger& ledger) {
  ledger.set_chain(Chain::kMain);
  for (const char* w : {"a:1", "b:1"}) {
    ledger.sink()(GpuTask(w, "forward", 0.003, 0.9, "aten::mm"));
    ledger.sink()(GpuTask(w, "backward", 0.006, 1.7, "aten::mm"));
    ledger.sink()(GpuTask(w, "update", 0.001, 0.2, "aten::_fused_adam_"));
  }
  ledger.set_chain(Chain::kTrial);
  ledger.sink()(GpuTask("a:1", "forward", 0.002, 0.4, "aten::addmm"));
  ledger.set_chain(Chain::kNone);
}

// Steps 0-5 of one run, then step 6 of another phase; an evaluation's task
// outside steps at step 3.
std::string Record(bool like_last) {
  CostLedger ledger(HptSpec{});
  for (int64_t step = 0; step < 7; ++step) {
    const bool lora = step == 6;
    if (step == 0 || !like_last) {
      RecordStep(ledger);
    } else {
      ledger.RecordLikeLastStep();
    }
    if (step == 3) ledger.sink()(GpuTask("a:1", "forward", 0.004, 0.5, "aten::bmm"));
    ledger.CloseStep(step, lora ? CostPhase::lora_gpu : CostPhase::full, 2,
                     0.01 + 0.001 * double(step));
  }
  std::string out;  // deterministic: the record's settings are a map
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  ledger.record().SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// A run's later steps counted as repeats of its first leave the record a
// step-by-step recording leaves, byte for byte: the tasks measured on
// their devices, the shapes and their step ranges, the phases' GPU time
// and energy, the evaluation outside steps, and a step that closes as
// another phase (which records the repeated tasks in full).
TEST(CostLedgerTest, StepsLikeTheLastRecordAsRecordedOnes) {
  const std::string recorded = Record(false);
  EXPECT_EQ(Record(true), recorded);
  WorkRecord record;
  ASSERT_TRUE(record.ParseFromString(recorded));
  ASSERT_EQ(record.phases_size(), 2);
  EXPECT_EQ(record.phases(0).steps(), 6);
  EXPECT_EQ(record.phases(1).phase(), CostPhase::lora_gpu);
  EXPECT_EQ(record.devices(0).tasks(), 7 * 4 + 1);  // a:1: 3 main, 1 trial a step; the evaluation
}

}  // namespace
}  // namespace hpt
