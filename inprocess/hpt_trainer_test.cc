// The trainer through the HpT switch with real worker executors in this
// process (LibTorch GPU worker, ReRAM and systolic device models), for each
// LoRA-phase placement.
#include <algorithm>

#include "coordinator/spec/job_spec.h"
#include "coordinator/training/trainer.h"
#include "data/synthetic.h"
#include "gtest/gtest.h"
#include "inprocess/in_process_workers.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/sim/device_executor.h"

namespace hpt {
namespace {

class HptTrainerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Run(const std::string& placement, int epochs = 8, int batch_size = 16,
           int max_steps_per_epoch = 0) {
    data_ = SmallSyntheticWindows(6);
    JobSpec spec;
    spec.mutable_model()->set_preset("tiny");
    spec.mutable_training()->set_epochs(epochs);
    spec.mutable_training()->set_batch_size(batch_size);
    spec.mutable_training()->set_max_steps_per_epoch(max_steps_per_epoch);
    spec.mutable_training()->mutable_optimizer()->set_learning_rate(0.003);
    HptSpec& h = *spec.mutable_hpt();
    h.set_check_window_steps(4);
    h.set_loss_threshold(0.9);
    h.set_weight_threshold(0.9);
    h.set_switch_rule(SwitchRule::paper);  // the paper's rule and trial, whatever the default
    h.set_placement(PlacementNamed(placement));
    h.mutable_lora()->set_rank(2);
    spec = *NormalizeJobSpec(spec);
    Trainer::Options options = workers_.Options();
    options.on_progress = [this](const TrainerUpdate& u) { last_ = u; };
    trainer_ = std::make_unique<Trainer>("j", spec, data_.get(), workers_.gpus(), options);
    status_ = trainer_->Run();
  }

  const DeviceCost* Cost(DeviceKind::Name kind) const {
    for (const DeviceCost& d : last_.device_costs) {
      if (d.kind() == kind) return &d;
    }
    return nullptr;
  }

  std::unique_ptr<WindowDataset> data_;
  InProcessWorkers workers_;
  std::unique_ptr<Trainer> trainer_;
  TrainerUpdate last_;
  absl::Status status_;
};

TEST_P(HptTrainerTest, SwitchesAndTrainsTheLoraPhaseOnItsPlacement) {
  const std::string placement = GetParam();
  Run(placement);
  ASSERT_TRUE(status_.ok()) << status_;
  const HptStatus& h = last_.hpt;
  ASSERT_GT(h.switch_step(), 0) << h.DebugString();
  EXPECT_EQ(h.phase(), TrainingPhase::lora);
  // The events end with a t-test that found no difference, then the switch.
  ASSERT_GE(h.events_size(), 4);
  const PhaseEvent& t_test = h.events(h.events_size() - 2);
  EXPECT_EQ(t_test.kind(), PhaseEvent::TRIAL_END);
  EXPECT_FALSE(t_test.significant());
  EXPECT_GE(t_test.p(), 0.01);
  EXPECT_EQ(t_test.dof(), 2 * 4 - 2);
  EXPECT_EQ(h.events(h.events_size() - 1).kind(), PhaseEvent::SWITCH);
  EXPECT_EQ(h.events(h.events_size() - 1).iteration() + 1, h.switch_step());
  EXPECT_EQ(h.lora_ranks_size(), 4);  // 2 layers x (q, v)
  const int64_t steps = last_.progress.step();
  const int64_t lora_steps = steps - h.switch_step();
  ASSERT_GT(lora_steps, 0);
  // Phases and the comparison add up.
  double total_s = 0;
  for (const PhaseCost& c : h.phases()) total_s += c.simulated_s();
  EXPECT_NEAR(h.comparison().hpt_time_s(), total_s, 1e-12);
  EXPECT_GT(h.comparison().energy_ratio(), 0);
  // Projected to the preset's paper length (tiny: the job's own 8 epochs).
  const CostComparison& cmp = h.comparison();
  EXPECT_EQ(cmp.project_steps(), last_.progress.total_steps());
  EXPECT_NEAR(cmp.projected_time_ratio(),
              cmp.projected_gpu_only_time_s() / cmp.projected_hpt_time_s(), 1e-12);
  EXPECT_GT(cmp.projected_gpu_only_time_s(), 0);
  EXPECT_FALSE(cmp.projection_method().empty());
  EXPECT_GE(cmp.time_notes_size(), 1);
  EXPECT_GT(last_.test_metrics.values(), 0);
  EXPECT_TRUE(std::isfinite(last_.test_metrics.rmse()));
  // The exported model is plain: no adapters, no constants.
  for (const auto& [name, t] : trainer_->trained_model().parameters) {
    EXPECT_EQ(name.find("lora_"), std::string::npos) << name;
    EXPECT_NE(name, "token_encoding");
  }
  EXPECT_EQ(trainer_->trained_model().parameters.count("layers.1.self_attn.q_proj.weight"), 1u);

  const DeviceCost* reram = Cost(DeviceKind::reram);
  if (placement == "gpu") {
    EXPECT_EQ(reram, nullptr);
    return;
  }
  ASSERT_NE(reram, nullptr);
  const auto& c = reram->cost().counters();
  // tiny: 2 layers x 8192 base weights x 4 cells (8-bit offset weights in
  // 2-bit cells), times the copies the chip holds of each.
  const double cells = 2 * 8192 * 4.0;
  ASSERT_EQ(h.reram_layers_size(), 12);
  double copied_cells = 0;
  int64_t most_copies = 0;
  for (const ReramLayerPlacement& r : h.reram_layers()) {
    copied_cells += 4.0 * double(r.in_features() * r.out_features() * r.duplication());
    most_copies = std::max(most_copies, r.duplication());
  }
  if (placement == "paper") {
    // The LoRA phase is pipelined sample by sample across its devices (and
    // the ReRAM segments' tiles): shorter than its devices' busy time added
    // up, never shorter than the one systolic array's busy time.
    const PhaseCost* lora = nullptr;
    for (const PhaseCost& p : h.phases()) {
      if (p.phase() == CostPhase::lora) lora = &p;
    }
    ASSERT_NE(lora, nullptr);
    double busy = 0;
    for (const auto& [kind, s] : lora->device_busy_s()) busy += s;
    EXPECT_LT(lora->simulated_s(), busy);
    EXPECT_GE(lora->simulated_s(), lora->device_busy_s().at("systolic") * (1 - 1e-9));
    // ISAAC's 1,008 tiles hold many copies of each one-tile layer.
    EXPECT_GT(most_copies, 1);
    EXPECT_EQ(c.at("cell_writes"), copied_cells);
    EXPECT_EQ(c.at("max_cell_writes"), 1.0);
  } else {  // reram_full: one copy each; every update rewrites every cell
    EXPECT_EQ(most_copies, 1);
    EXPECT_EQ(c.at("cell_writes"), cells * double(1 + lora_steps));
    EXPECT_EQ(c.at("max_cell_writes"), double(1 + lora_steps));
    EXPECT_GT(c.at("worst_wear"), 0);
  }
}

// A run that ends while a trial is still open delivers the full model: the
// job's phase says "full", not "trial", and nothing switched.
using HptTrainerEndTest = HptTrainerTest;
TEST_F(HptTrainerEndTest, ARunEndingMidTrialEndsInTheFullPhase) {
  // Where the first trial starts, from a run long enough to reach it.
  Run("paper", /*epochs=*/1, /*batch_size=*/4);
  ASSERT_TRUE(status_.ok()) << status_;
  int64_t trial_start = -1;
  for (const PhaseEvent& e : last_.hpt.events()) {
    if (e.kind() == PhaseEvent::TRIAL_START) {
      trial_start = e.iteration();
      break;
    }
  }
  ASSERT_GE(trial_start, 0) << last_.hpt.DebugString();
  // The same run cut two steps into that trial (a trial lasts a window of 4).
  Run("paper", /*epochs=*/1, /*batch_size=*/4, /*max_steps_per_epoch=*/trial_start + 3);
  ASSERT_TRUE(status_.ok()) << status_;
  const HptStatus& h = last_.hpt;
  ASSERT_GE(h.events_size(), 1);
  const PhaseEvent& last_event = h.events(h.events_size() - 1);
  ASSERT_EQ(last_event.kind(), PhaseEvent::TRIAL_START) << h.DebugString();
  ASSERT_EQ(last_event.iteration(), trial_start) << h.DebugString();
  EXPECT_EQ(last_.progress.step(), trial_start + 3);
  EXPECT_EQ(h.phase(), TrainingPhase::full);
  EXPECT_EQ(h.switch_step(), -1);
  for (const auto& [name, t] : trainer_->trained_model().parameters) {
    EXPECT_EQ(name.find("lora_"), std::string::npos) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Placements, HptTrainerTest,
                         ::testing::Values("paper", "gpu", "reram_full"));

}  // namespace
}  // namespace hpt
