// CostLedger: one job's costs, from the tasks its workers report to the
// report a user reads (docs/cost-model.md). It records each task's cost
// per worker and on the chain of the step it belongs to (the main step,
// the trial's LoRA copy, the switch's loads and ReRAM programming, the
// recovery's reloads); at the end of a step it lays those chains on a
// CostTimeline (cost_timeline.h) and adds the step to its phase. From the
// phases it derives the comparison with GPU-only full-parameter training,
// its projection to the job's full length, and where the time goes.
//
//   CostLedger ledger(LinkOf(spec.hpt().interconnect()));
//   ledger.set_chain(CostLedger::Chain::kMain);
//   ledger.Record({worker, "gpu", "forward", response.cost(), bytes});
//   ...
//   ledger.CloseStep(step, /*lora_step=*/false, /*data_parallel_ranks=*/2, wall_s);
//   ledger.Compare(spec.hpt().project_epochs(), &status.hpt);
//
// Not thread-safe: the trainer records from one thread at a time (tasks
// that run concurrently report after they join).
#ifndef HPT_COORDINATOR_COST_LEDGER_H_
#define HPT_COORDINATOR_COST_LEDGER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coordinator/cost_timeline.h"
#include "coordinator/hybrid_runner.h"
#include "coordinator/worker_client.h"
#include "proto/checkpoint.pb.h"
#include "proto/job_service.pb.h"

namespace hpt {

// The job's interconnect between devices (JobSpec hpt.interconnect; unset
// fields keep CostTimeline's defaults).
InterconnectConfig LinkOf(const InterconnectSpec& spec);

class CostLedger {
 public:
  // Which of the step's timelines a task belongs to.
  enum class Chain { kMain, kTrial, kSwitch, kRecovery, kNone };

  explicit CostLedger(InterconnectConfig link);
  CostLedger(const CostLedger&) = delete;  // sink() points at this one
  CostLedger& operator=(const CostLedger&) = delete;

  void set_chain(Chain chain) { chain_ = chain; }
  // Adds a task's cost to its worker's totals and to the current chain.
  void Record(TaskRecord record);
  // Hands a HybridRunner's task records to Record. Valid while the ledger is.
  const TaskSink& sink() const { return sink_; }

  // The bytes of the trainable parameters: a data-parallel update moves
  // them through the ring allreduce.
  void set_trainable_bytes(int64_t bytes) { trainable_bytes_ = bytes; }
  // Steps in one epoch: the projection's unit.
  void set_steps_per_epoch(int64_t steps) { steps_per_epoch_ = steps; }

  // Lays the step's chains on its timeline and adds it to its phase (and,
  // in the full phase, to GPU-only). `data_parallel_ranks` > 1: the main
  // tasks ran data-parallel over that many GPU workers. `wall_s`: the
  // step's measured wall time. `fallback`: a LoRA-phase step on the
  // fallback placement (the GPU workers), a phase of its own ("lora-gpu").
  void CloseStep(int64_t step, bool lora_step, int data_parallel_ranks, double wall_s,
                 bool fallback = false);
  // Lays the recovery chain (workers reloaded after a restore at `step`).
  void CloseRecovery(int64_t step);

  // Writes the phases, the comparison with GPU-only training, its
  // projection to `project_epochs` epochs and the time notes into `hpt`
  // (whose switch_step says whether and where the job switched).
  void Compare(double project_epochs, HptStatus* hpt) const;

  const CostReport& total() const { return total_; }
  const std::vector<DeviceCost>& device_costs() const { return device_costs_; }

  // Checkpoints: the ledger's part of the header, and back. `workers` are
  // the run's workers: each takes over the costs recorded under its
  // address.
  void SaveTo(CheckpointHeader* header) const;
  void RestoreFrom(const CheckpointHeader& header, const std::vector<WorkerClient*>& workers);

 private:
  // Lays `tasks` on `timeline`: a data-parallel step, a pipelined chain of
  // device segments, or a plain chain.
  void LayTasks(const std::vector<TaskRecord>& tasks, int data_parallel_ranks,
                CostTimeline* timeline) const;
  void AddTimeNotes(CostComparison* c) const;
  // Lays a one-off chain (the switch's loads and programming, a recovery's
  // reloads) as a chain at `step`, adds it to `phase`, and empties it.
  void CloseOneOff(int64_t step, std::vector<TaskRecord>* tasks, PhaseCost* phase);

  InterconnectConfig link_;
  Chain chain_ = Chain::kNone;
  CostReport total_;
  std::vector<DeviceCost> device_costs_;
  std::map<WorkerClient*, size_t> cost_index_;  // into device_costs_
  std::vector<TaskRecord> main_tasks_, trial_tasks_, switch_tasks_, recovery_tasks_;
  int64_t trainable_bytes_ = 0;
  int64_t steps_per_epoch_ = 0;
  PhaseCost full_cost_, switch_cost_, lora_cost_, recovery_cost_, fallback_cost_;
  double gpu_only_full_s_ = 0, gpu_only_full_j_ = 0;
  int64_t full_steps_ = 0, lora_steps_ = 0, fallback_steps_ = 0;
  const TaskSink sink_ = [this](const TaskRecord& r) { Record(r); };
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_COST_LEDGER_H_
