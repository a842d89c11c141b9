#include "cost/work_recorder.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

// A GPU task of `worker` that read `board`'s counter from `start_j` to
// `end_j` and says `j` of it is its own ("" board: no counter).
FinishedTask Task(const std::string& worker, const std::string& board, double start_j,
                  double end_j, double j) {
  CostReport cost;
  cost.set_measured_s(0.01);
  cost.set_measured_j(j);
  cost.set_board(board);
  cost.set_counter_start_j(start_j);
  cost.set_counter_end_j(end_j);
  return MakeFinishedTask(worker, DeviceKind::gpu, "forward", cost);
}

const RecordedPhase& Full(const WorkRecorder& r) { return r.record().phases(0); }

// Two workers on one GPU read the whole board's counter over spans that
// overlap: the board's energy is the union of what the counter moved,
// counted once, not the sum of what each worker read.
TEST(WorkRecorderTest, TwoWorkersOnOneBoardCountItOnce) {
  WorkRecorder r;
  r.AddStep(CostPhase::full,
            {Task("a:1", "GPU-1", 100, 110, 10), Task("b:1", "GPU-1", 104, 116, 12),
             Task("c:1", "GPU-2", 50, 55, 5), Task("d:1", "", 0, 0, 3)},
            {}, 4, 0, 0.1);
  // GPU-1: 100 to 116, 16 J; GPU-2 5 J; a worker without a counter, 3 J.
  EXPECT_DOUBLE_EQ(Full(r).gpu_main_j(), 16 + 5 + 3);
  EXPECT_DOUBLE_EQ(Full(r).gpu_all_j(), 16 + 5 + 3);
  // Spans that do not overlap (one worker's tasks, one after another) add.
  WorkRecorder alone;
  alone.AddStep(CostPhase::full,
                {Task("a:1", "GPU-1", 100, 110, 10), Task("a:1", "GPU-1", 110, 113, 3)}, {}, 1, 0,
                0.1);
  EXPECT_DOUBLE_EQ(Full(alone).gpu_main_j(), 13);
}

// A run's tasks carry the run's interval and a share of its energy: two
// ranks' runs of 4 steps on one board, each step's three tasks splitting
// a quarter of their run's energy, come to a quarter of the union a step.
// A trial trains on the first rank's worker, inside its run.
TEST(WorkRecorderTest, RunsOnOneBoardCountTheirUnionOnceAStep) {
  WorkRecorder r;
  for (int step = 0; step < 4; ++step) {
    r.AddStep(CostPhase::full,
              {Task("a:1", "GPU-1", 0, 40, 5), Task("a:1", "GPU-1", 0, 40, 3),
               Task("a:1", "GPU-1", 0, 40, 1), Task("b:1", "GPU-1", 2, 44, 6),
               Task("b:1", "GPU-1", 2, 44, 3), Task("b:1", "GPU-1", 2, 44, 1.5)},
              {Task("a:1", "GPU-1", 0, 40, 1)}, 2, step, 0.1);
  }
  // The union is 0 to 44 J: 11 J a step. The main chain said 19.5 J of the
  // two runs' 82, the trial 1 J more.
  EXPECT_DOUBLE_EQ(Full(r).gpu_main_j(), 4 * 19.5 * 44 / 82);
  EXPECT_DOUBLE_EQ(Full(r).gpu_all_j(), 4 * 20.5 * 44 / 82);
  EXPECT_NEAR(Full(r).gpu_all_j(), 44, 1e-9);
}

// A run's steps repeat one step's tasks: counting them with RepeatStep
// gives the record AddStep gives, byte for byte, across phases, a trial,
// ranks and a gap in the steps.
TEST(WorkRecorderTest, RepeatedStepsRecordAsAddedOnes) {
  std::vector<FinishedTask> main = {Task("a:1", "GPU-1", 0, 40, 5), Task("b:1", "GPU-1", 2, 44, 6),
                                    Task("c:1", "", 0, 0, 0.3)};
  main[2].cost.mutable_work()->add_kernels()->set_op("aten::mm");
  const std::vector<FinishedTask> trial = {Task("a:1", "GPU-1", 0, 40, 1)};
  WorkRecorder added, repeated;
  WorkRecorder::StepTally tally;
  for (int64_t step : {0, 1, 2, 3, 7, 8}) {
    const CostPhase::Name phase = step < 7 ? CostPhase::full : CostPhase::lora_gpu;
    const double wall_s = 0.1 + 0.01 * double(step);
    for (const FinishedTask& t : main) added.Measure(t), repeated.Measure(t);
    for (const FinishedTask& t : trial) added.Measure(t), repeated.Measure(t);
    added.AddStep(phase, main, trial, 2, step, wall_s);
    if (step == 0 || step == 7) {
      tally = repeated.AddStep(phase, main, trial, 2, step, wall_s);
    } else {
      repeated.RepeatStep(tally, step, wall_s);
    }
    added.AddStep(CostPhase::off_step, main, {}, 1, step, 0);
    repeated.AddStep(CostPhase::off_step, main, {}, 1, step, 0);
  }
  EXPECT_EQ(added.record().SerializeAsString(), repeated.record().SerializeAsString());
  ASSERT_EQ(repeated.record().shapes_size(), 3);
  EXPECT_EQ(repeated.record().shapes(0).count(), 4);
  EXPECT_EQ(repeated.record().shapes(0).run_first_size(), 1);  // steps 0 to 3
  EXPECT_EQ(repeated.record().shapes(0).run_last(0), 3);
  EXPECT_EQ(repeated.record().phases(0).gpu_steps(), 4);
  EXPECT_DOUBLE_EQ(repeated.record().phases(0).gpu_all_j(), 4 * (12.0 * 44 / 82 + 0.3));
}

}  // namespace
}  // namespace hpt
