#include "coordinator/training/trainer.h"

#include <cmath>
#include <limits>
#include <map>

#include "absl/synchronization/mutex.h"
#include "common/tensor_codec.h"
#include "data/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/rendezvous_store.h"

namespace hpt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Records what the trainer asks of a worker; answers with scripted losses.
class FakeWorker : public WorkerClient {
 public:
  explicit FakeWorker(std::string address) : address_(std::move(address)) {}

  const std::string& address() const override { return address_; }
  absl::StatusOr<LoadParametersResponse> LoadParameters(
      const LoadParametersHeader& header, const std::vector<TensorChunk>&) override {
    absl::MutexLock lock(&mu);
    log.push_back("load");
    loaded = header;
    return LoadParametersResponse();
  }
  absl::Status JoinGroup(const JoinGroupRequest& r) override {
    absl::MutexLock lock(&mu);
    log.push_back("join");
    join = r;
    return absl::OkStatus();
  }
  absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& r) override {
    absl::MutexLock lock(&mu);
    ForwardResponse response;
    if (!r.train()) {
      log.push_back("eval");
      response.set_loss(0.5);
      if (r.return_outputs()) {  // a prediction of zeros, [n, tokens, 1]
        const int64_t n = r.inputs().shape(0), tokens = r.inputs().shape(1);
        ToProto(HostTensor({n, tokens, 1}), "outputs", response.mutable_outputs());
      }
      return response;
    }
    log.push_back("forward");
    shard_sizes.push_back(r.inputs().shape(0));
    response.set_loss(next_loss);
    next_loss *= 0.9;
    response.mutable_cost()->set_measured_s(0.25);
    return response;
  }
  absl::StatusOr<BackwardResponse> Backward(const BackwardRequest& r) override {
    absl::MutexLock lock(&mu);
    log.push_back("backward");
    global_batches.push_back(r.global_batch_size());
    return BackwardResponse();
  }
  absl::StatusOr<ApplyUpdateResponse> ApplyUpdate(
      const ApplyUpdateRequest& r) override {
    absl::MutexLock lock(&mu);
    log.push_back("update");
    learning_rates.push_back(r.learning_rate());
    ApplyUpdateResponse response;
    response.set_applied(true);
    return response;
  }
  absl::StatusOr<std::vector<TensorChunk>> Snapshot(const std::string&,
                                                     const std::vector<std::string>&,
                                                     bool = false) override {
    return std::vector<TensorChunk>();
  }
  absl::Status Release(const std::string&) override { return absl::OkStatus(); }

  absl::Mutex mu;
  std::vector<std::string> log;
  std::vector<int64_t> shard_sizes, global_batches;
  std::vector<double> learning_rates;
  LoadParametersHeader loaded;
  JoinGroupRequest join;
  double next_loss = 1.0;

 private:
  std::string address_;
};

WindowDataset Data(int64_t time_steps) {
  SyntheticOptions s;
  s.stations = 3;
  s.time_steps = time_steps;
  WindowOptions w;
  w.input_steps = 4;
  w.horizon = 1;
  w.train = {0, time_steps};
  return *WindowDataset::Create(MakeSyntheticSeries(s), w);
}

JobSpec Spec(int epochs, int batch, int workers) {
  JobSpec spec;
  spec.mutable_model()->set_preset("tiny");
  spec.mutable_training()->set_epochs(epochs);
  spec.mutable_training()->set_batch_size(batch);
  spec.mutable_training()->mutable_optimizer()->set_learning_rate(0.01);
  spec.mutable_training()->set_step_lr_step_size(1);
  spec.mutable_training()->set_step_lr_gamma(0.5);
  spec.mutable_training()->set_seed(1);
  spec.mutable_placement()->set_gpu_workers(workers);
  return spec;
}

TEST(TrainerTest, StepLrHalvesEachEpoch) {
  TrainingSpec t = Spec(3, 4, 1).training();
  EXPECT_DOUBLE_EQ(Trainer::LearningRate(t, 0), 0.01);
  EXPECT_DOUBLE_EQ(Trainer::LearningRate(t, 1), 0.005);
  EXPECT_DOUBLE_EQ(Trainer::LearningRate(t, 2), 0.0025);
  t.set_step_lr_step_size(0);
  EXPECT_DOUBLE_EQ(Trainer::LearningRate(t, 5), 0.01);
}

TEST(TrainerTest, EvaluationBatchesAreLargeButBounded) {
  TrainingSpec training;
  training.set_batch_size(16);
  ModelConfig model;
  model.set_num_heads(8);
  model.set_d_model(64);
  // Small model, 8 tokens: the widest activation (4 x 64 floats a row)
  // allows 16 Ki rows, the cap -> 2048 samples; attention bound
  // 32 Mi / (8 * 64) = 65536.
  EXPECT_EQ(EvalBatchSize(training, model, 8), 2048);
  // Wind-like: d_model 512, 57 tokens: 16 MiB / (2048 floats x 4 B) = 2048
  // rows -> 35 samples.
  model.set_d_model(512);
  EXPECT_EQ(EvalBatchSize(training, model, 57), 35);
  // swe-like: 323 tokens, 16 heads, d_model 64 -> rows 50; attention
  // 33554432 / (16 * 104329) = 20.
  model.set_d_model(64);
  model.set_num_heads(16);
  EXPECT_EQ(EvalBatchSize(training, model, 323), 20);
  // Never below the training batch, and an explicit size wins.
  training.set_batch_size(64);
  EXPECT_EQ(EvalBatchSize(training, model, 323), 64);
  training.set_eval_batch_size(7);
  EXPECT_EQ(EvalBatchSize(training, model, 323), 7);
}

TEST(TrainerTest, ShardsAreAsEvenAsPossible) {
  EXPECT_THAT(Trainer::ShardSizes(5, 2), ElementsAre(3, 2));
  EXPECT_THAT(Trainer::ShardSizes(6, 3), ElementsAre(2, 2, 2));
  EXPECT_THAT(Trainer::ShardSizes(7, 1), ElementsAre(7));
}

TEST(TrainerTest, OneWorkerRunsForwardBackwardUpdatePerStep) {
  // 13 rows, window 4 + horizon 1: 9 samples; batch 4: steps of 4, 4, 1.
  WindowDataset data = Data(13);
  FakeWorker worker("w0");
  std::vector<TrainerUpdate> updates;
  Trainer::Options options;
  options.on_progress = [&](const TrainerUpdate& u) { updates.push_back(u); };
  Trainer trainer("job", Spec(2, 4, 1), &data, {&worker}, options);
  ASSERT_TRUE(trainer.Run().ok());
  EXPECT_THAT(std::vector<std::string>(worker.log.begin(), worker.log.begin() + 7),
              ElementsAre("load", "forward", "backward", "update", "forward",
                          "backward", "update"));
  EXPECT_THAT(worker.shard_sizes, ElementsAre(4, 4, 1, 4, 4, 1));
  EXPECT_THAT(worker.global_batches, ElementsAre(4, 4, 1, 4, 4, 1));
  EXPECT_THAT(worker.learning_rates,
              ElementsAre(0.01, 0.01, 0.01, 0.005, 0.005, 0.005));
  EXPECT_EQ(worker.loaded.model().input_features(), 4);
  EXPECT_EQ(worker.loaded.init_seed(), 1u);
  ASSERT_FALSE(updates.empty());
  // The plan is said before the first step: epoch 1 of 2, 6 steps.
  EXPECT_EQ(updates.front().progress.step(), 0);
  EXPECT_EQ(updates.front().progress.epoch(), 1);
  EXPECT_EQ(updates.front().progress.epochs(), 2);
  EXPECT_EQ(updates.front().progress.total_steps(), 6);
  EXPECT_EQ(updates.front().hpt.phase(), TrainingPhase::full);
  const TrainerUpdate& last = updates.back();
  EXPECT_EQ(last.progress.step(), 6);
  EXPECT_EQ(last.progress.total_steps(), 6);
  ASSERT_EQ(last.epoch_losses.size(), 2u);
  // Losses 1, .9, .81 then .729, .6561, .59049.
  EXPECT_NEAR(last.epoch_losses[0], (1 + 0.9 + 0.81) / 3, 1e-12);
  EXPECT_NEAR(last.epoch_losses[1], (0.729 + 0.6561 + 0.59049) / 3, 1e-12);
  EXPECT_NEAR(last.cost.measured_s(), 6 * 0.25, 1e-12);
}

// The ETA goes at the pace since the first finished step, not at the
// average over a first step that took ten times as long (a worker's warm
// up; after a switch, the full phase's pace).
TEST(TrainerTest, TheEtaGoesAtThePaceSinceTheFirstStep) {
  class TimedWorker : public FakeWorker {
   public:
    TimedWorker(absl::Time* clock) : FakeWorker("w0"), clock_(clock) {}
    absl::StatusOr<ForwardResponse> Forward(const ForwardRequest& r) override {
      if (r.train()) *clock_ += absl::Seconds(trained_++ == 0 ? 10 : 1);
      return FakeWorker::Forward(r);
    }

   private:
    absl::Time* clock_;
    int trained_ = 0;
  };
  WindowDataset data = Data(13);  // 6 steps over 2 epochs at batch 4
  absl::Time clock = absl::UnixEpoch();
  TimedWorker worker(&clock);
  std::map<int64_t, double> eta;  // after each step
  Trainer::Options options;
  options.now = [&] { return clock; };
  options.on_progress = [&](const TrainerUpdate& u) {
    if (u.progress.step() > 0) eta[u.progress.step()] = u.progress.eta_s();
  };
  Trainer trainer("job", Spec(2, 4, 1), &data, {&worker}, options);
  ASSERT_TRUE(trainer.Run().ok());
  EXPECT_DOUBLE_EQ(eta[1], 10.0 * 5);  // no pace yet: the average
  EXPECT_DOUBLE_EQ(eta[2], 1.0 * 4);   // the average would say 5.5 s a step
  EXPECT_DOUBLE_EQ(eta[3], 1.0 * 3);
  EXPECT_DOUBLE_EQ(eta[6], 0.0);
}

// While the test split is predicted the job says how far it is, at most
// once a second of its clock, and says nothing of it once it is done.
TEST(TrainerTest, AnEvaluationPublishesHowFarItIs) {
  SyntheticOptions s;
  s.stations = 3;
  s.time_steps = 30;
  WindowOptions w;
  w.input_steps = 4;
  w.horizon = 1;
  w.train = {0, 20};
  w.test = {16, 30};  // windows starting 16..25: 10 test samples
  WindowDataset data = *WindowDataset::Create(MakeSyntheticSeries(s), w);
  FakeWorker worker("w0");
  std::vector<std::string> evaluating;
  Trainer::Options options;
  absl::Time clock = absl::UnixEpoch();
  // Half a second a reading: every other prediction publishes.
  options.now = [&] { return clock += absl::Milliseconds(500); };
  options.on_progress = [&](const TrainerUpdate& u) {
    evaluating.push_back(u.progress.evaluating());
  };
  JobSpec spec = Spec(1, 4, 1);
  spec.mutable_training()->set_eval_batch_size(2);
  Trainer trainer("job", spec, &data, {&worker}, options);
  ASSERT_TRUE(trainer.Run().ok());
  std::vector<std::string> shown;
  for (const std::string& e : evaluating) {
    if (!e.empty()) shown.push_back(e);
  }
  EXPECT_THAT(shown,
              ElementsAre("the test split: 0 of 10 samples", "the test split: 4 of 10 samples",
                          "the test split: 8 of 10 samples"));
  ASSERT_FALSE(evaluating.empty());
  EXPECT_EQ(evaluating.back(), "");
}

TEST(TrainerTest, TwoWorkersSplitEachBatchAndShareTheGlobalSize) {
  WindowDataset data = Data(13);  // 9 samples; batch 5: steps of 5 and 4
  FakeWorker w0("w0"), w1("w1");
  RendezvousStore* no_store = nullptr;
  Trainer::Options options;
  options.rendezvous = no_store;
  Trainer trainer("job", Spec(1, 5, 2), &data, {&w0, &w1}, options);
  absl::Status status = trainer.Run();
  // Without a rendezvous store data parallelism is refused up front.
  ASSERT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("rendezvous"));
}

TEST(TrainerTest, NonFiniteLossFailsWithAdvice) {
  WindowDataset data = Data(13);
  FakeWorker worker("w0");
  worker.next_loss = std::numeric_limits<double>::quiet_NaN();
  Trainer trainer("job", Spec(1, 4, 1), &data, {&worker}, {});
  absl::Status status = trainer.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("nan at step 0"));
  EXPECT_THAT(status.message(), HasSubstr("learning_rate"));
  // No update was applied after the bad forward.
  EXPECT_THAT(worker.log, ElementsAre("load", "forward"));
}

TEST(TrainerTest, CancellationStopsAtAStepBoundary) {
  WindowDataset data = Data(13);
  FakeWorker worker("w0");
  int steps = 0;
  Trainer::Options options;
  options.on_progress = [&](const TrainerUpdate& u) { steps = u.progress.step(); };
  options.cancelled = [&] { return steps >= 2; };
  Trainer trainer("job", Spec(3, 4, 1), &data, {&worker}, options);
  absl::Status status = trainer.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(worker.learning_rates.size(), 2u);
}

TEST(TrainerTest, SharedDeviceNoteNamesTheRanksOfEachSharedDevice) {
  EXPECT_EQ(SharedDeviceNote({}), "");
  EXPECT_EQ(SharedDeviceNote({"gpu-A", "gpu-B"}), "");
  EXPECT_EQ(SharedDeviceNote({"", ""}), "");  // unknown: devices of their own
  EXPECT_THAT(SharedDeviceNote({"gpu-A", "gpu-B", "gpu-A"}),
              HasSubstr("ranks 0, 2 share device gpu-A: a Gloo group"));
}

// Runs a two-worker job whose GPU workers are on `devices`; returns the
// join requests both workers got and the job's last HpT status.
void RunTwoRanks(const std::vector<std::string>& devices, JoinGroupRequest* join0,
                 JoinGroupRequest* join1, HptStatus* hpt) {
  WindowDataset data = Data(13);
  FakeWorker w0("w0"), w1("w1");
  absl::StatusOr<std::unique_ptr<RendezvousStore>> store = RendezvousStore::Start("127.0.0.1");
  ASSERT_TRUE(store.ok()) << store.status();
  Trainer::Options options;
  options.rendezvous = store->get();
  options.gpu_devices = devices;
  options.on_progress = [&](const TrainerUpdate& u) { *hpt = u.hpt; };
  Trainer trainer("job", Spec(1, 4, 2), &data, {&w0, &w1}, options);
  absl::Status ran = trainer.Run();
  ASSERT_TRUE(ran.ok()) << ran;
  *join0 = w0.join;
  *join1 = w1.join;
}

TEST(TrainerTest, RanksSharingOneGpuJoinAGlooGroupAndTheReportSaysWhy) {
  JoinGroupRequest j0, j1;
  HptStatus hpt;
  RunTwoRanks({"GPU-0000", "GPU-0000"}, &j0, &j1, &hpt);
  EXPECT_EQ(j0.backend(), "gloo");
  EXPECT_EQ(j1.backend(), "gloo");
  EXPECT_EQ(j0.world_size(), 2);
  EXPECT_THAT(hpt.group_note(), HasSubstr("ranks 0, 1 share device GPU-0000"));
}

TEST(TrainerTest, RanksOnGpusOfTheirOwnJoinTheDevicesOwnLibrary) {
  JoinGroupRequest j0, j1;
  HptStatus hpt;
  RunTwoRanks({"GPU-0000", "GPU-1111"}, &j0, &j1, &hpt);
  EXPECT_EQ(j0.backend(), "");
  EXPECT_EQ(j1.backend(), "");
  EXPECT_EQ(hpt.group_note(), "");
}

}  // namespace
}  // namespace hpt
