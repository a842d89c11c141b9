// Trainer: runs one job's training schedule against its workers. Owns the
// epochs and batches, the StepLR learning-rate schedule, the order of
// tasks and the HpT method (docs/method.md):
//
//   full phase   every step: forwards, backwards (gradients averaged by the
//                workers through Gloo), updates, on the GPU workers
//                (gpu_tasks.h). The phase controller sees each step's loss
//                and, at the end of each check window, the distance the
//                tracked layer's [W_q | W_v] moved. A trial trains a LoRA
//                copy (job "<id>/trial" on the first GPU worker) on the
//                same batches.
//   switch       LoRA is created from the current full weights with a fresh
//                optimizer. Placement "gpu" keeps it on the GPU workers;
//                "paper" / "reram_full" plan its segments (hybrid_plan.h),
//                program the base weights into ReRAM workers once, and run
//                the rest on systolic workers (hybrid_runner.h).
//   lora phase   the same schedule to the end, on the new placement.
//
// With the output head on a ReRAM or systolic worker (hpt.mode full), a
// step is: encoder forward (GPU) -> head forward and loss (head worker) ->
// head backward -> encoder backward -> both updates.
//
// What it calls: every task's cost goes to its CostLedger (cost_ledger.h),
// which lays steps on the cost timeline and compares with GPU-only
// training; checkpoints are encoded by checkpoint_codec.h every
// `checkpoint_every` steps and at the switch, with the workers' snapshots.
// A trainer given one resumes there: the workers are loaded from it (the
// ReRAM workers re-programmed, those writes counted under a "recovery"
// phase), and training goes on with the next step. The epoch's order comes
// from (seed, epoch) and dropout masks from (seed, step), so the steps that
// follow are those an uninterrupted run takes. Evaluation is evaluation.h's.
//
// Not thread-safe: one Run at a time. The clock is injectable.
#ifndef HPT_COORDINATOR_TRAINING_TRAINER_H_
#define HPT_COORDINATOR_TRAINING_TRAINER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "common/host_tensor.h"
#include "coordinator/dispatch/worker_client.h"
#include "coordinator/training/checkpoint.h"
#include "coordinator/training/cost_ledger.h"
#include "coordinator/training/evaluation.h"
#include "coordinator/training/gpu_tasks.h"
#include "coordinator/training/hybrid_runner.h"
#include "coordinator/training/phase_controller.h"
#include "coordinator/training/switch_policy.h"
#include "coordinator/training/training_state.h"
#include "data/window_dataset.h"
#include "proto/job_service.pb.h"

namespace hpt {

class RendezvousStore;

// The trained model, LoRA merged (model_export.h).
struct TrainedModel {
  ModelConfig config;
  std::map<std::string, HostTensor> parameters;
  DataUnits units;  // the data's units (an empty message: unknown)
};

// What turns `data`'s units into the model's and back (proto/common.proto).
DataUnits DataUnitsOf(const WindowDataset& data);

// INVALID_ARGUMENT with advice where a step's training `loss` is not
// finite (the model diverged); OK otherwise.
absl::Status CheckTrainingLoss(double loss, int64_t step, double learning_rate);

// Why a data-parallel group of GPU workers on `devices` (their device ids,
// in rank order) is Gloo's: which ranks share a device. Empty when every
// rank has a device of its own (the device's library then: NCCL on CUDA).
std::string SharedDeviceNote(const std::vector<std::string>& devices);

// The phase controller a job's normalised `hpt` asks for, in a run of
// `total_steps` steps.
PhaseControllerOptions PhaseControllerOptionsOf(const HptSpec& hpt, int64_t total_steps);

class Trainer {
 public:
  struct Options {
    std::function<absl::Time()> now = [] { return absl::Now(); };
    std::function<void(const TrainerUpdate&)> on_progress;
    std::function<bool()> cancelled = [] { return false; };
    // Needed when the job has more than one GPU worker.
    RendezvousStore* rendezvous = nullptr;
    double join_timeout_s = 60;
    // How long a gradient allreduce waits for a peer: after a peer stops,
    // the worker left is free again this long after the step began.
    double collective_timeout_s = 15;
    // The worker running the output head when placement.head_device is not
    // gpu; the GPU worker then runs the encoder segment.
    WorkerClient* head_worker = nullptr;
    // The LoRA phase's device workers (placements paper and reram_full).
    std::vector<WorkerClient*> reram_workers, systolic_workers;
    // Each GPU worker's device id (WorkerEntry::device_id), in the order of
    // the workers; empty or missing: a device of its own. Workers that
    // share one form a Gloo group, never NCCL's.
    std::vector<std::string> gpu_devices;
    // A checkpoint every this many steps (<= 0: none but the switch's);
    // each goes to on_checkpoint (unset: none are made).
    int64_t checkpoint_every = 0;
    std::function<void(Checkpoint)> on_checkpoint;
    // Resume from this checkpoint of the job instead of step 0.
    std::shared_ptr<const Checkpoint> resume;
    // Non-empty: the LoRA phase's planned devices are gone (why, e.g. "no
    // reram worker within 60 s"), and it runs on the GPU workers instead
    // (hpt.fallback_placement gpu). Then `devices_returned` is asked at
    // every step boundary; once it says yes, Run checkpoints and returns
    // ABORTED, for the caller to go on from there on the planned placement.
    std::string fallback_reason;
    std::function<bool()> devices_returned;
    // Who decides an HpT job's switch: null (every job the coordinator
    // runs), the job's phase controller; else this policy, asked at a
    // resume and after every full-phase step (switch_policy.h). Must
    // outlive the trainer.
    SwitchPolicy* switch_policy = nullptr;
    // False: the test split is evaluated after the last epoch only (runs
    // that read only the final quality; evaluation changes no training).
    bool evaluate_every_epoch = true;
    // Steps on the GPU workers go as runs of whole steps (TrainRun, on the
    // samples loaded with the model): up to the phase controller's next
    // check, the next checkpoint, the epoch's end or a batch of another
    // size, whichever comes first; a LoRA trial trains beside the model
    // inside the run. False, or workers that answer UNIMPLEMENTED: task by
    // task (forward, backward, update calls). The output head on another
    // worker, the device placements and a fallback placement go task by
    // task either way.
    bool runs = true;
    // The most steps one run carries (0: no bound but the above).
    int64_t max_run_steps = 0;
  };

  // `spec` is normalised; `workers` has spec.placement.gpu_workers entries.
  Trainer(std::string job_id, JobSpec spec, const WindowDataset* data,
          std::vector<WorkerClient*> workers, Options options);
  ~Trainer();

  // Trains to the end. CANCELLED when cancelled; the worker's error, or
  // INVALID_ARGUMENT for a non-finite loss, when a step fails.
  absl::Status Run();

  // After a successful Run: the trained model.
  const TrainedModel& trained_model() const { return trained_; }

  // Learning rate of 0-based `epoch` under StepLR.
  static double LearningRate(const TrainingSpec& training, int epoch);
  // Sizes of the data-parallel shards of a batch of `batch` samples.
  static std::vector<int64_t> ShardSizes(int64_t batch, int workers) {
    return GpuTasks::ShardSizes(batch, workers);
  }

 private:
  using Chain = CostLedger::Chain;

  // A GPU worker's header for `job` (this one or its "/trial"): the model,
  // the optimizer, the tokens, and the seed plus `seed_offset` (0 the full
  // model, kTrialSeedOffset the trial's adapters, kLoraSeedOffset the LoRA
  // phase's).
  static constexpr uint64_t kTrialSeedOffset = 1, kLoraSeedOffset = 2;
  LoadParametersHeader GpuHeader(const std::string& job, uint64_t seed_offset) const;
  // The LoRA model's header: the LoRA phase's optimizer and adapters.
  LoadParametersHeader LoraHeader(const std::string& job, uint64_t seed_offset) const;
  LoadParametersHeader TrialHeader() const;
  // The full phase's header after `steps_done` steps, its optimizer state
  // after cursor_.main_updates updates: under hpt.switch_rule layerwise,
  // the layers switched so far carry adapters (each updated once a step
  // since its switch) and freeze.
  LoadParametersHeader FullHeader(int64_t steps_done) const;

  // Schedule.
  // Steps per epoch, the progress totals and the phase controller.
  absl::Status Prepare();
  // Prepare, then the model loaded or the checkpoint restored; the first
  // step to train.
  absl::StatusOr<int64_t> Begin();
  // Epoch `epoch`'s steps from `*step` (mid-epoch after a resume), in runs
  // or task by task, with the checkpoints due inside the epoch; a
  // checkpoint due at its last step is left in `checkpoint_due`
  // (kNoCheckpointDue: none).
  absl::Status TrainEpoch(int epoch, int64_t* step, CheckpointCause::Name* checkpoint_due);
  // The epoch's loss, evaluation, history point, report and the checkpoint
  // left due.
  absl::Status CloseEpoch(int epoch, int64_t step, CheckpointCause::Name* checkpoint_due);
  static constexpr CheckpointCause::Name kNoCheckpointDue =
      CheckpointCause::CHECKPOINT_CAUSE_UNSPECIFIED;
  // The trained model collected and selected, and the probe's baselines.
  absl::Status Finish();
  // One step of the schedule: the model's, then the method's.
  absl::Status RunStep(const std::vector<int64_t>& indices, int64_t step, double learning_rate,
                       bool* switched);
  absl::Status TrainStep(const std::vector<int64_t>& indices, int64_t step,
                         double learning_rate, double* loss);
  // Steps `step`, `step` + 1, ... of `batches` as one run on the GPU
  // workers, then each step's method and bookkeeping as RunStep's; sets
  // `switched` when the last step switched. Falls back to RunStep for each
  // (and for the rest of the job) where the workers take no runs.
  absl::Status RunSteps(const std::vector<std::vector<int64_t>>& batches, int64_t step,
                        double learning_rate, bool* switched);
  // How many steps from `step` (the epoch's `s`-th of `sizes`, each step's
  // batch) the next call takes: 1 task by task, else a run's length.
  int64_t StepsInRun(int64_t step, int64_t s, const std::vector<int64_t>& sizes) const;
  // The phase controller's view of a full-phase step: the trial's step,
  // the weight check, and the trial or switch it decides on.
  // `run`, `run_step`: the run that trained this step, and the step's place
  // in it (the trial's loss is read from it; RunSteps records its tasks);
  // null: the trial's step is taken here.
  absl::Status ControlPhase(const std::vector<int64_t>& indices, int64_t step,
                            double learning_rate, double loss, bool* switched,
                            const GpuTasks::Run* run = nullptr, size_t run_step = 0);
  // ControlPhase under Options::switch_policy: the policy decides.
  absl::Status AskPolicy(int64_t step, double loss, double trial_loss, bool* switched);
  // A switch the policy decided, to the LoRA phase from `step`.
  absl::Status SwitchNow(int64_t step);
  // Progress after a step of `samples` samples with `loss`; `report`: tell
  // on_progress (Report).
  void FinishStep(int64_t step, int64_t samples, double loss, bool report = true);
  // Scores the validation split and, unless the selection skips it, the
  // test split; true when it scored the test split. `epoch` (1-based) names
  // the evaluation in the test predictions kept.
  absl::StatusOr<bool> Evaluate(int epoch);
  // Predict, publishing how many of `split`'s `samples` it has predicted
  // at most once a second.
  Predictor PredictShowingProgress(const std::string& split, int64_t samples);
  absl::StatusOr<HostTensor> Predict(const HostTensor& x);

  // Loading workers.
  absl::Status LoadModel();
  absl::Status JoinGroups();
  // The head's parameters (and optimizer state, after `optimizer_steps`
  // updates) to the head worker.
  absl::Status LoadHead(std::vector<TensorChunk> head, int64_t optimizer_steps);
  // Plans the device segments for `ranks` and loads them, in place of any
  // before: the LoRA phase's, or, in the full phase under layerwise after
  // `steps_done` steps, the switched layers' (the rest training in full on
  // the systolic arrays with the full phase's optimizer).
  absl::Status StartHybrid(const std::map<std::string, HostTensor>& params,
                           const std::map<std::string, int>& ranks, int64_t optimizer_steps,
                           int64_t steps_done = 0);
  // The model's tensors where they train now (the devices, or the first
  // GPU worker); `optimizer_state`: with Adam's moments, the ReRAM read
  // state and the reference weights auto ranks start from.
  absl::StatusOr<std::map<std::string, HostTensor>> ModelTensors(bool optimizer_state);
  // Under a device placement, the full phase's layers switched so far
  // move to the devices: adapters made on the first GPU worker from
  // `tensors` (the model, the kept Adam moments, the reference weights),
  // then everything planned onto the ReRAM and systolic workers.
  absl::Status SwitchLayersToDevices(const LoadParametersHeader& header,
                                     std::map<std::string, HostTensor> tensors, int64_t steps_done);
  // The adapters' ranks a LoRA load made, kept in the job's status.
  std::map<std::string, int> KeepLoraRanks(const LoadParametersResponse& loaded);
  // From the first GPU worker, which has just made the adapters, to the
  // devices (StartHybrid) with `read_state` for the layers already on
  // ReRAM; the GPU workers released. In the full phase the Adam moments
  // come along and the reference weights stay with the trainer.
  absl::Status MoveToDevices(const std::map<std::string, int>& ranks,
                             std::map<std::string, HostTensor> read_state, int64_t optimizer_steps,
                             int64_t steps_done);
  absl::Status CollectTrainedModel();

  // Phase control.
  // The weight test's distances over the window that ends now: the
  // tracked layer's (hpt.weight_layer), and under layerwise every layer's.
  struct WindowDistances {
    double tracked = 0;
    std::vector<double> layers;
  };
  absl::StatusOr<WindowDistances> WeightDistances();
  absl::Status StartTrial();
  // Frees the trial's LoRA copy on the first GPU worker, if any.
  void DropTrial();
  absl::Status Switch();
  // Layerwise, after `steps_done` steps: the GPU workers reloaded with the
  // switched layers frozen under adapters, the other layers' Adam moments
  // kept.
  absl::Status SwitchLayers(int64_t steps_done);
  void RecordEvents();

  // Checkpoints.
  absl::StatusOr<Checkpoint> MakeCheckpoint(int64_t step, CheckpointCause::Name cause);
  absl::Status SaveCheckpoint(int64_t step, CheckpointCause::Name cause);
  absl::Status Restore(const Checkpoint& checkpoint);
  // The selected epoch a checkpoint carries (none: none kept yet).
  absl::Status RestoreSelection(const Checkpoint& checkpoint);
  // Loads the workers from a restored checkpoint's tensors.
  absl::Status Reload(const Checkpoint& checkpoint);

  void Report();

  // Goes back to the planned placement when its devices are back (see
  // Options::fallback_reason): a checkpoint, then ABORTED. OK otherwise.
  absl::Status BackToPlannedPlacement(int64_t step);

  const std::string job_id_;
  const JobSpec spec_;
  // Where the LoRA phase runs: the spec's placement, or gpu on fallback.
  const Placement::Name placement_;
  const WindowDataset* data_;
  std::vector<WorkerClient*> workers_;
  Options options_;
  ModelConfig model_;
  TrainerUpdate state_;
  TrainerCursor cursor_;
  absl::Time start_;
  absl::Time step_start_;
  // The ETA's pace: steps done and time since the first run of steps
  // finished after the placement last changed (the start, a resume, a
  // switch to LoRA), so a LoRA phase on slower devices is not timed at the
  // full phase's pace, nor a job at its first step's. pace_from_next_: the
  // next finished run sets them.
  absl::Time pace_since_;
  int64_t pace_steps_ = 0;
  bool pace_from_next_ = true;
  CostLedger ledger_;
  GpuTasks gpu_;

  // HpT.
  bool hpt_ = false;
  TrainingPhase::Name phase_ = TrainingPhase::full;
  std::unique_ptr<PhaseController> controller_;
  size_t events_seen_ = 0;
  std::unique_ptr<HybridRunner> hybrid_;
  // While the full phase trains on the devices (layerwise, some layers
  // switched): the weights at the job's start ("<name>@initial"), which
  // the GPU session keeps for auto ranks and the devices do not.
  std::map<std::string, HostTensor> reference_weights_;
  TrainedModel trained_;
  // training.select best_validation: the epoch with the least validation
  // loss so far, with what the job keeps of it (checkpoints carry it, so a
  // resumed job chooses among every epoch it trained).
  struct Selected {
    int epoch = 0;  // 0: none yet
    double validation_loss = 0, test_loss = 0;
    QualityMetrics metrics;
    TestPredictions predictions;
    TrainedModel model;
  };
  Selected selected_;
  // Keeps epoch `epoch`, which validates best so far: its weights (the
  // workers' now), test metrics and `predictions`.
  absl::Status Keep(int epoch, double validation_loss, TestPredictions predictions);
  // At the end: the job's model, metrics and predictions become the
  // selected epoch's. False where none was selected.
  bool ApplySelection();
  // The GPU workers hold the job's samples and train in runs.
  bool runs_ = false;
  // Where runs are asked for and no head worker takes part: the job's
  // samples into a GPU load (`header` and its `chunks`), and runs from
  // here on. Returns the bytes added (0: none).
  int64_t AddSamples(LoadParametersHeader* header, std::vector<TensorChunk>* chunks);
  // Counts `steps` of the current phase on the GPU workers (HptStatus
  // dispatch): as one run `run`, with how its workers launched them, or
  // task by task where `run` is null.
  void CountDispatch(int64_t steps, const GpuTasks::Run* run);
};

}  // namespace hpt

#endif  // HPT_COORDINATOR_TRAINING_TRAINER_H_
