// CostLedger: one job's costs, from the tasks its workers report to the
// report a user reads (docs/cost-model.md). Each task's work goes into the
// job's work record (work_recorder.h) on the chain of the step it belongs
// to (the main step, the trial's LoRA copy, the switch's loads and ReRAM
// programming, the recovery's reloads; evaluation outside steps). The
// report is the record costed (record_costing.h): the same path `hptctl whatif`
// takes under other settings, so a whatif under the job's own settings
// gives its report.
//
//   CostLedger ledger(spec.hpt());
//   ledger.set_chain(CostLedger::Chain::kMain);
//   ledger.Record(MakeFinishedTask(worker->address(), DeviceKind::gpu, "forward", response.cost(),
//   bytes));
//   ...
//   ledger.CloseStep(step, CostPhase::full, /*data_parallel_ranks=*/2, wall_s);
//   ledger.Compare(spec.hpt().project_epochs(), &status.hpt);
//
// Not thread-safe: the trainer records from one thread at a time (tasks
// that run concurrently report after they join).
#ifndef HPT_COORDINATOR_TRAINING_COST_LEDGER_H_
#define HPT_COORDINATOR_TRAINING_COST_LEDGER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/dispatch/worker_client.h"
#include "coordinator/training/hybrid_plan.h"
#include "coordinator/training/hybrid_runner.h"
#include "cost/record_costing.h"
#include "cost/work_recorder.h"
#include "proto/checkpoint.pb.h"
#include "proto/job_service.pb.h"

namespace hpt {

class CostLedger {
 public:
  // Which of the step's timelines a task belongs to.
  enum class Chain { kMain, kTrial, kSwitch, kRecovery, kNone };

  // `hpt`: the job's normalised HpT spec (its interconnect and chip).
  explicit CostLedger(const HptSpec& hpt);
  CostLedger(const CostLedger&) = delete;  // sink() points at this one
  CostLedger& operator=(const CostLedger&) = delete;

  void set_chain(Chain chain) { chain_ = chain; }
  // Adds a task to the record: to the current chain, or, outside one, to
  // the work outside steps (an evaluation pass: one shape until the next
  // step or report).
  void Record(FinishedTask record);
  // Hands a HybridRunner's task records to Record. Valid while the ledger is.
  const TaskSink& sink() const { return sink_; }

  // The bytes of the trainable parameters: a data-parallel update moves
  // them through the ring allreduce.
  void set_trainable_bytes(int64_t bytes) { recorder_.record().set_trainable_bytes(bytes); }
  // Whose record it is, for those who read it.
  void set_job(const std::string& job_id, const std::string& preset) {
    recorder_.record().set_job_id(job_id);
    recorder_.record().set_preset(preset);
  }
  // Steps in one epoch: the projection's unit.
  void set_steps_per_epoch(int64_t steps) { recorder_.record().set_steps_per_epoch(steps); }
  // The ReRAM chips as `plan` fills them (`reram`: the plan's ReRAM
  // workers), for re-planning the layers' copies under other settings.
  void SetReramChips(const HybridPlan& plan, const std::vector<WorkerClient*>& reram);

  // Adds the step's chains to the record as one step of `phase`, where
  // the step trained: full, partial (layerwise, some layers switched), lora
  // or lora_gpu (the fallback placement).
  // `data_parallel_ranks` > 1: the main tasks ran data-parallel over that
  // many GPU workers. `wall_s`: the step's measured wall time.
  void CloseStep(int64_t step, CostPhase::Name phase, int data_parallel_ranks, double wall_s);
  // The step under way does what the last closed one did: its main and
  // trial tasks are that step's again (a run's steps share one response's
  // costs). Measures them now, as Record would; CloseStep then counts the
  // step without copying them, unless other tasks joined its chains or it
  // closes as another phase.
  void RecordLikeLastStep();
  // The full-phase step as a GPU worker timed it under each baseline
  // (replacing any earlier probe's).
  void SetProbes(const std::vector<MeasuredBaseline>& probes) {
    recorder_.record().clear_probes();
    for (const MeasuredBaseline& m : probes) *recorder_.record().add_probes() = m;
    dirty_ = true;
  }
  // Adds the recovery chain (workers reloaded after a restore at `step`).
  void CloseRecovery(int64_t step);

  // Writes the phases, the comparison with GPU-only training, its
  // projection to `project_epochs` epochs and the time notes into `hpt`
  // (whose switch_step says whether and where the job switched).
  void Compare(double project_epochs, HptStatus* hpt);

  // All tasks' costs, and per worker, as the record costs them now.
  const CostReport& total();
  const std::vector<DeviceCost>& device_costs();
  const WorkRecord& record() const { return recorder_.record(); }

  // Checkpoints: the ledger's part of the header (the work record), and
  // back. A checkpoint written before work records restores no costs.
  void SaveTo(CheckpointHeader* header) const;
  void RestoreFrom(const CheckpointHeader& header);

 private:
  // Costs the record as it stands (a new costing when devices came).
  void Refresh();
  void CloseOneOff(CostPhase::Name phase, int64_t step, std::vector<FinishedTask>* tasks);

  Chain chain_ = Chain::kNone;
  WorkRecorder recorder_;
  std::unique_ptr<RecordCosting> costing_;
  std::string coster_devices_;  // the devices' settings the costing was made for
  JobCosts costs_;
  bool dirty_ = true;
  int64_t step_ = 0;  // the step tasks outside steps are noted at
  std::vector<FinishedTask> main_tasks_, trial_tasks_, switch_tasks_, recovery_tasks_,
      off_step_tasks_;
  // The last closed step's chains and what the recorder counted for it;
  // `like_last_`: RecordLikeLastStep was called for the step under way.
  std::vector<FinishedTask> last_main_, last_trial_;
  WorkRecorder::StepTally last_tally_;
  bool like_last_ = false;
  const TaskSink sink_ = [this](const FinishedTask& r) { Record(r); };
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_COST_LEDGER_H_
