// hpt.switch_rule layerwise with real worker executors in this process:
// each encoder layer switches to LoRA at its own check, a switched layer's
// base weights stop while the other layer trains on, the job's switch is
// the last layer's, and a job resumed between two layers' switches ends
// like the uninterrupted one. Under the paper's device placement each
// layer's frozen weights go to ReRAM as it switches.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/tensor_codec.h"
#include "coordinator/spec/job_spec.h"
#include "coordinator/training/checkpoint.h"
#include "coordinator/training/trainer.h"
#include "gtest/gtest.h"
#include "inprocess/in_process_workers.h"

namespace hpt {
namespace {

class LayerwiseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = SmallSyntheticWindows(6);
    spec_.mutable_model()->set_preset("tiny");
    spec_.mutable_model()->set_dropout(0.1);
    spec_.mutable_model()->set_dropout_set(true);
    spec_.mutable_training()->set_epochs(8);
    spec_.mutable_training()->set_batch_size(16);
    spec_.mutable_training()->mutable_optimizer()->set_learning_rate(0.003);
    spec_.mutable_training()->set_seed(kSeed);
    HptSpec& h = *spec_.mutable_hpt();
    h.set_check_window_steps(3);
    h.set_weight_threshold(kWeightThreshold);
    h.set_switch_rule(SwitchRule::layerwise);
    h.set_placement(Placement::gpu);
    spec_ = *NormalizeJobSpec(spec_);
  }

  // The seed and threshold make the two layers of the tiny model pass
  // their weight tests at different checks (the test asserts that they do).
  static constexpr uint64_t kSeed = 7;
  static constexpr double kWeightThreshold = 0.15;

  // On fresh workers each time; every update kept in `updates` if given.
  TrainerOutcome Run(std::shared_ptr<const Checkpoint> resume,
                     std::vector<TrainerUpdate>* updates = nullptr) {
    InProcessWorkers workers;
    TrainerOutcome out;
    Trainer::Options options = workers.Options();
    options.on_progress = [&](const TrainerUpdate& u) {
      out.last = u;
      if (updates != nullptr) updates->push_back(u);
    };
    options.checkpoint_every = 3;
    options.on_checkpoint = [&](Checkpoint c) { out.checkpoints.push_back(std::move(c)); };
    options.resume = std::move(resume);
    Trainer trainer("job-000001", spec_, data_.get(), workers.gpus(), options);
    out.status = trainer.Run();
    if (out.status.ok()) out.model = trainer.trained_model();
    return out;
  }

  static const HostTensor& Tensor(const Checkpoint& c, const std::string& name) {
    return c.tensors.at("model/" + name);
  }

  // The checkpoints from the first layer's switch to just before the last.
  static std::vector<const Checkpoint*> Between(const TrainerOutcome& run, int64_t first,
                                                int64_t last) {
    std::vector<const Checkpoint*> between;
    for (const Checkpoint& c : run.checkpoints) {
      if (c.header.step() >= first && c.header.step() < last) between.push_back(&c);
    }
    return between;
  }

  // A run resumed from `from` switches its layers where `whole` did and
  // ends with its model.
  void ExpectResumedRunEndsTheSame(const TrainerOutcome& whole, const Checkpoint& from) {
    const TrainerOutcome resumed = Run(std::make_shared<const Checkpoint>(from));
    ASSERT_TRUE(resumed.status.ok()) << resumed.status;
    const HptStatus& h = whole.last.hpt;
    EXPECT_EQ(resumed.last.hpt.switch_step(), h.switch_step());
    EXPECT_EQ(std::vector<int64_t>(resumed.last.hpt.layer_switch_steps().begin(),
                                   resumed.last.hpt.layer_switch_steps().end()),
              std::vector<int64_t>(h.layer_switch_steps().begin(), h.layer_switch_steps().end()));
    EXPECT_NEAR(resumed.last.progress.test_loss(), whole.last.progress.test_loss(),
                1e-5 * whole.last.progress.test_loss());
    EXPECT_LT(MaxParameterDifference(whole.model, resumed.model), 1e-5);
  }

  std::unique_ptr<WindowDataset> data_;
  JobSpec spec_;
};

TEST_F(LayerwiseTest, LayersSwitchAloneAndResumeBetweenThem) {
  const TrainerOutcome whole = Run(nullptr);
  ASSERT_TRUE(whole.status.ok()) << whole.status;
  const HptStatus& h = whole.last.hpt;
  ASSERT_EQ(h.layer_switch_steps_size(), 2) << h.DebugString();
  const int64_t first =
      *std::min_element(h.layer_switch_steps().begin(), h.layer_switch_steps().end());
  const int64_t last =
      *std::max_element(h.layer_switch_steps().begin(), h.layer_switch_steps().end());
  ASSERT_GT(first, 0) << h.DebugString();
  ASSERT_LT(first, last) << "the layers switched together: " << h.DebugString();
  EXPECT_EQ(h.switch_step(), last);
  EXPECT_EQ(h.phase(), TrainingPhase::lora);
  const int frozen = h.layer_switch_steps(0) == first ? 0 : 1;
  const std::string frozen_q = absl::StrCat("layers.", frozen, ".self_attn.q_proj.weight");
  const std::string other_q = absl::StrCat("layers.", 1 - frozen, ".self_attn.q_proj.weight");
  // Each switch is named in the check that made it.
  int switched_checks = 0;
  for (const PhaseEvent& e : h.events()) {
    if (e.kind() != PhaseEvent::CHECK || e.switched_layers().empty()) continue;
    ++switched_checks;
    EXPECT_EQ(e.iteration() + 1, h.layer_switch_steps(e.switched_layers(0)));
  }
  EXPECT_EQ(switched_checks, 2);
  // Between the switches: the frozen layer's base stands still and has an
  // adapter; the other layer's base moves and has none.
  const std::vector<const Checkpoint*> between = Between(whole, first, last);
  ASSERT_GE(between.size(), 2u) << "first " << first << ", last " << last;
  const Checkpoint& a = *between.front();
  const Checkpoint& b = *between.back();
  EXPECT_EQ(Tensor(a, frozen_q).data, Tensor(b, frozen_q).data);
  EXPECT_NE(Tensor(a, other_q).data, Tensor(b, other_q).data);
  EXPECT_EQ(
      a.tensors.count(absl::StrCat("model/layers.", frozen, ".self_attn.lora_q_proj.A.weight")),
      1u);
  EXPECT_EQ(
      a.tensors.count(absl::StrCat("model/layers.", 1 - frozen, ".self_attn.lora_q_proj.A.weight")),
      0u);
  EXPECT_EQ(h.lora_ranks().count(absl::StrCat("layers.", frozen, ".self_attn.q_proj")), 1u);

  // Resumed between the two switches on a fresh worker: the same run.
  ExpectResumedRunEndsTheSame(whole, a);
}

const PhaseCost* FindPhase(const HptStatus& h, CostPhase::Name name) {
  for (const PhaseCost& p : h.phases()) {
    if (p.phase() == name) return &p;
  }
  return nullptr;
}

TEST_F(LayerwiseTest, OnTheDevicesEachLayerGoesToReramAsItSwitches) {
  spec_.mutable_hpt()->set_placement(Placement::paper);
  std::vector<TrainerUpdate> updates;
  const TrainerOutcome whole = Run(nullptr, &updates);
  ASSERT_TRUE(whole.status.ok()) << whole.status;
  const HptStatus& h = whole.last.hpt;
  ASSERT_EQ(h.layer_switch_steps_size(), 2) << h.DebugString();
  const int64_t first = std::min(h.layer_switch_steps(0), h.layer_switch_steps(1));
  const int64_t last = std::max(h.layer_switch_steps(0), h.layer_switch_steps(1));
  ASSERT_GT(first, 0) << h.DebugString();
  ASSERT_LT(first, last) << "the layers switched together: " << h.DebugString();
  EXPECT_EQ(h.switch_step(), last);
  const int frozen = h.layer_switch_steps(0) == first ? 0 : 1;
  const std::string frozen_prefix = absl::StrCat("layers.", frozen, ".");
  const std::string other_prefix = absl::StrCat("layers.", 1 - frozen, ".");

  // Between the switches only the switched layer's weights are on ReRAM;
  // after the job's switch, both layers' are.
  int between_updates = 0;
  for (const TrainerUpdate& u : updates) {
    const int64_t step = u.progress.step();
    if (step < first || step >= last) continue;
    ++between_updates;
    ASSERT_GT(u.hpt.reram_layers_size(), 0) << "step " << step;
    for (const ReramLayerPlacement& r : u.hpt.reram_layers()) {
      EXPECT_TRUE(absl::StartsWith(r.layer(), frozen_prefix)) << r.layer() << " at step " << step;
    }
  }
  EXPECT_GT(between_updates, 0);
  bool other_on_reram = false;
  for (const ReramLayerPlacement& r : h.reram_layers()) {
    other_on_reram |= absl::StartsWith(r.layer(), other_prefix);
  }
  EXPECT_TRUE(other_on_reram) << h.DebugString();

  // The record names the stretch between the switches as its own phase.
  const PhaseCost* partial = FindPhase(h, CostPhase::partial);
  ASSERT_NE(partial, nullptr) << h.DebugString();
  EXPECT_EQ(partial->first_step(), first);
  EXPECT_EQ(partial->last_step(), last - 1);
  EXPECT_GT(partial->simulated_s(), 0);
  ASSERT_NE(FindPhase(h, CostPhase::full), nullptr);
  EXPECT_EQ(FindPhase(h, CostPhase::full)->last_step(), first - 1);
  EXPECT_EQ(FindPhase(h, CostPhase::lora)->first_step(), last);

  // On the devices between the switches: the frozen layer's base stands
  // still and keeps its crossbars' read state; the other layer's moves,
  // keeping the reference weights its auto rank will need.
  const std::vector<const Checkpoint*> between = Between(whole, first, last);
  ASSERT_GE(between.size(), 2u) << "first " << first << ", last " << last;
  const Checkpoint& a = *between.front();
  const Checkpoint& b = *between.back();
  const std::string frozen_q = frozen_prefix + "self_attn.q_proj.weight";
  const std::string other_q = other_prefix + "self_attn.q_proj.weight";
  EXPECT_EQ(Tensor(a, frozen_q).data, Tensor(b, frozen_q).data);
  EXPECT_NE(Tensor(a, other_q).data, Tensor(b, other_q).data);
  EXPECT_EQ(a.tensors.count("model/" + frozen_q + kReramReadSuffix), 1u);
  EXPECT_EQ(a.tensors.count("model/" + other_q + kReramReadSuffix), 0u);
  EXPECT_EQ(a.tensors.count("model/" + other_q + kInitialSuffix), 1u);
  EXPECT_EQ(a.tensors.count("model/token_encoding"), 1u);

  // Resumed between the switches on fresh workers: the same run.
  ExpectResumedRunEndsTheSame(whole, a);
}

}  // namespace
}  // namespace hpt
