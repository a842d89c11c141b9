#include "coordinator/trainer.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/cost_util.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/job_spec.h"
#include "coordinator/rendezvous_store.h"

namespace hpt {
namespace {

// Runs fn(i) for every worker at once; returns the first error.
template <typename Fn>
absl::Status ForEachWorker(size_t n, Fn fn) {
  if (n == 1) return fn(0);
  std::vector<std::future<absl::Status>> futures;
  for (size_t i = 0; i < n; ++i) {
    futures.push_back(std::async(std::launch::async, fn, i));
  }
  absl::Status first;
  for (auto& f : futures) {
    absl::Status s = f.get();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

// A non-finite loss ends the job with advice, before any update applies.
absl::Status DivergenceCheck(double loss, int64_t step, double learning_rate) {
  if (std::isfinite(loss)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "training loss became ", loss, " at step ", step,
      "; the model diverged: lower training.optimizer.learning_rate (now ",
      learning_rate, ") or check the data for extreme values"));
}

const std::string& HeadKind(const JobSpec& spec) {
  return spec.placement().head_device();
}

}  // namespace

Trainer::Trainer(std::string job_id, JobSpec spec, const WindowDataset* data,
                 std::vector<WorkerClient*> workers, Options options)
    : job_id_(std::move(job_id)),
      spec_(std::move(spec)),
      data_(data),
      workers_(std::move(workers)),
      options_(std::move(options)) {}

double Trainer::LearningRate(const TrainingSpec& training, int epoch) {
  const double lr = training.optimizer().learning_rate();
  if (training.step_lr_step_size() <= 0) return lr;
  return lr * std::pow(training.step_lr_gamma(),
                       epoch / training.step_lr_step_size());
}

std::vector<int64_t> Trainer::ShardSizes(int64_t batch, int workers) {
  std::vector<int64_t> sizes(workers, batch / workers);
  for (int64_t i = 0; i < batch % workers; ++i) ++sizes[i];
  return sizes;
}

void Trainer::AddCost(WorkerClient* worker, const std::string& kind,
                      const CostReport& cost) {
  hpt::AddCost(cost, &state_.cost);
  auto [it, inserted] = cost_index_.try_emplace(worker, state_.device_costs.size());
  if (inserted) {
    DeviceCost& d = state_.device_costs.emplace_back();
    d.set_kind(kind);
    d.set_worker(worker->address());
  }
  DeviceCost& d = state_.device_costs[it->second];
  d.set_tasks(d.tasks() + 1);
  hpt::AddCost(cost, d.mutable_cost());
}


void Trainer::Report() {
  if (options_.on_progress) options_.on_progress(state_);
}

absl::Status Trainer::LoadModel() {
  ASSIGN_OR_RETURN(ModelConfig model,
                   ResolveModelConfig(spec_.model(), data_->input_features(),
                                      data_->output_features()));
  LoadParametersHeader header;
  header.set_job_id(job_id_);
  *header.mutable_model() = model;
  *header.mutable_optimizer() = spec_.training().optimizer();
  header.set_init_seed(spec_.training().seed());
  header.set_num_tokens(static_cast<int32_t>(data_->num_tokens()));
  if (options_.head_worker != nullptr) header.set_gpu_segment("encoder");
  // Every rank initialises from the same seed; JoinGroup then broadcasts
  // rank 0's parameters so replicas are identical whatever the platform.
  RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) {
    return workers_[i]->LoadParameters(header, {}).status();
  }));
  if (workers_.size() > 1) {
    if (options_.rendezvous == nullptr) {
      return absl::FailedPreconditionError(
          "data-parallel training needs the coordinator's rendezvous store");
    }
    const std::string prefix =
        absl::StrCat(job_id_, "/", absl::ToUnixNanos(absl::Now()), "/");
    RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) {
      JoinGroupRequest join;
      join.set_job_id(job_id_);
      join.set_rank(static_cast<int32_t>(i));
      join.set_world_size(static_cast<int32_t>(workers_.size()));
      join.set_store_host(options_.rendezvous->host());
      join.set_store_port(options_.rendezvous->port());
      join.set_store_prefix(prefix);
      join.set_timeout_s(options_.join_timeout_s);
      return workers_[i]->JoinGroup(join);
    }));
  }
  if (options_.head_worker != nullptr) RETURN_IF_ERROR(LoadHead());
  return absl::OkStatus();
}

// The head's initial weights are the GPU's seeded ones: read them back and
// send them to the head worker as its segment.
absl::Status Trainer::LoadHead() {
  ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, workers_[0]->Snapshot(job_id_, {}));
  const std::vector<std::string> names = {"reduction.0.weight", "reduction.0.bias",
                                          "head.weight", "head.bias"};
  std::vector<TensorChunk> head;
  for (TensorChunk& c : chunks) {
    if (std::find(names.begin(), names.end(), c.name()) != names.end()) {
      head.push_back(std::move(c));
    }
  }
  const bool trainable = HeadKind(spec_) != "reram";  // ReRAM weights stay frozen
  LoadParametersHeader header;
  header.set_job_id(job_id_);
  *header.mutable_optimizer() = spec_.training().optimizer();
  SegmentSpec& segment = *header.mutable_segment();
  segment.set_name("head");
  SegmentOp* reduce = segment.add_ops();
  reduce->set_type(SegmentOp::LINEAR);
  reduce->set_weight("reduction.0.weight");
  reduce->set_bias("reduction.0.bias");
  reduce->set_trainable(trainable);
  segment.add_ops()->set_type(SegmentOp::RELU);
  SegmentOp* out = segment.add_ops();
  out->set_type(SegmentOp::LINEAR);
  out->set_weight("head.weight");
  out->set_bias("head.bias");
  out->set_trainable(trainable);
  ASSIGN_OR_RETURN(LoadParametersResponse loaded,
                   options_.head_worker->LoadParameters(header, head));
  AddCost(options_.head_worker, HeadKind(spec_), loaded.cost());
  return absl::OkStatus();
}

absl::StatusOr<double> Trainer::HeadStep(const HostTensor& x, const HostTensor& y,
                                         int64_t step, double learning_rate) {
  WorkerClient* gpu = workers_[0];
  WorkerClient* head = options_.head_worker;
  const std::string kind = HeadKind(spec_);
  ForwardRequest encode;
  encode.mutable_key()->set_job_id(job_id_);
  encode.mutable_key()->set_step(step);
  encode.mutable_key()->set_segment("encoder");
  ToProto(x, "inputs", encode.mutable_inputs());
  encode.set_train(true);
  ASSIGN_OR_RETURN(ForwardResponse encoded, gpu->Forward(encode));
  AddCost(gpu, "gpu", encoded.cost());
  ForwardRequest predict;
  predict.mutable_key()->set_job_id(job_id_);
  predict.mutable_key()->set_step(step);
  predict.mutable_key()->set_segment("head");
  *predict.mutable_inputs() = std::move(*encoded.mutable_outputs());
  ToProto(y, "targets", predict.mutable_targets());
  predict.set_train(true);
  ASSIGN_OR_RETURN(ForwardResponse predicted, head->Forward(predict));
  AddCost(head, kind, predicted.cost());
  const double loss = predicted.loss();
  if (!std::isfinite(loss)) return loss;  // the caller reports it
  BackwardRequest head_back;
  *head_back.mutable_key() = predict.key();
  head_back.set_global_batch_size(x.shape[0]);
  ASSIGN_OR_RETURN(BackwardResponse head_grads, head->Backward(head_back));
  AddCost(head, kind, head_grads.cost());
  BackwardRequest encoder_back;
  *encoder_back.mutable_key() = encode.key();
  encoder_back.set_global_batch_size(x.shape[0]);
  *encoder_back.mutable_grad_output() = std::move(*head_grads.mutable_grad_input());
  ASSIGN_OR_RETURN(BackwardResponse encoder_grads, gpu->Backward(encoder_back));
  AddCost(gpu, "gpu", encoder_grads.cost());
  for (WorkerClient* w : {gpu, head}) {
    ApplyUpdateRequest update;
    update.set_job_id(job_id_);
    update.set_step(step);
    update.set_learning_rate(learning_rate);
    ASSIGN_OR_RETURN(ApplyUpdateResponse applied, w->ApplyUpdate(update));
    AddCost(w, w == gpu ? "gpu" : kind, applied.cost());
  }
  return loss;
}

absl::Status Trainer::TrainStep(const std::vector<int64_t>& indices,
                                int64_t step, double learning_rate,
                                double* loss) {
  const int64_t batch = static_cast<int64_t>(indices.size());
  if (options_.head_worker != nullptr) {
    HostTensor x, y;
    data_->Gather(data_->train_starts(), indices, &x, &y);
    ASSIGN_OR_RETURN(*loss, HeadStep(x, y, step, learning_rate));
    return DivergenceCheck(*loss, step, learning_rate);
  }
  const std::vector<int64_t> shards = ShardSizes(batch, workers_.size());
  std::vector<ForwardResponse> forwards(workers_.size());
  std::vector<BackwardResponse> backwards(workers_.size());
  std::vector<ApplyUpdateResponse> updates(workers_.size());
  auto key_for = [&](TaskKey* key) {
    key->set_job_id(job_id_);
    key->set_step(step);
    key->set_micro_batch(0);
    key->set_segment("model");
  };
  RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) -> absl::Status {
    const int64_t begin =
        std::accumulate(shards.begin(), shards.begin() + i, int64_t{0});
    std::vector<int64_t> mine(indices.begin() + begin,
                              indices.begin() + begin + shards[i]);
    HostTensor x, y;
    data_->Gather(data_->train_starts(), mine, &x, &y);
    ForwardRequest request;
    key_for(request.mutable_key());
    ToProto(x, "inputs", request.mutable_inputs());
    ToProto(y, "targets", request.mutable_targets());
    request.set_train(true);
    ASSIGN_OR_RETURN(forwards[i], workers_[i]->Forward(request));
    return absl::OkStatus();
  }));
  double weighted = 0;
  for (size_t i = 0; i < workers_.size(); ++i) {
    weighted += forwards[i].loss() * shards[i];
    AddCost(workers_[i], "gpu", forwards[i].cost());
  }
  *loss = weighted / batch;
  RETURN_IF_ERROR(DivergenceCheck(*loss, step, learning_rate));
  RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) -> absl::Status {
    BackwardRequest request;
    key_for(request.mutable_key());
    request.set_global_batch_size(batch);
    ASSIGN_OR_RETURN(backwards[i], workers_[i]->Backward(request));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) -> absl::Status {
    ApplyUpdateRequest request;
    request.set_job_id(job_id_);
    request.set_step(step);
    request.set_learning_rate(learning_rate);
    ASSIGN_OR_RETURN(updates[i], workers_[i]->ApplyUpdate(request));
    return absl::OkStatus();
  }));
  for (size_t i = 0; i < workers_.size(); ++i) {
    AddCost(workers_[i], "gpu", backwards[i].cost());
    AddCost(workers_[i], "gpu", updates[i].cost());
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Trainer::Evaluate() {
  const std::vector<int64_t>& starts = data_->test_starts();
  if (starts.empty()) return 0.0;
  const int64_t batch = spec_.training().batch_size();
  double sum = 0;
  int64_t count = 0;
  for (int64_t begin = 0; begin < static_cast<int64_t>(starts.size());
       begin += batch) {
    std::vector<int64_t> indices;
    for (int64_t i = begin;
         i < std::min<int64_t>(begin + batch, starts.size()); ++i) {
      indices.push_back(i);
    }
    HostTensor x, y;
    data_->Gather(starts, indices, &x, &y);
    ASSIGN_OR_RETURN(double loss, EvaluateBatch(x, y));
    sum += loss * indices.size();
    count += indices.size();
  }
  return sum / count;
}

absl::StatusOr<double> Trainer::EvaluateBatch(const HostTensor& x, const HostTensor& y) {
  ForwardRequest request;
  request.mutable_key()->set_job_id(job_id_);
  request.mutable_key()->set_step(-1);
  request.mutable_key()->set_segment(options_.head_worker ? "encoder" : "model");
  ToProto(x, "inputs", request.mutable_inputs());
  if (options_.head_worker == nullptr) ToProto(y, "targets", request.mutable_targets());
  request.set_train(false);
  ASSIGN_OR_RETURN(ForwardResponse response, workers_[0]->Forward(request));
  AddCost(workers_[0], "gpu", response.cost());
  if (options_.head_worker == nullptr) return response.loss();
  ForwardRequest head;
  head.mutable_key()->set_job_id(job_id_);
  head.mutable_key()->set_step(-1);
  head.mutable_key()->set_segment("head");
  *head.mutable_inputs() = std::move(*response.mutable_outputs());
  ToProto(y, "targets", head.mutable_targets());
  head.set_train(false);
  ASSIGN_OR_RETURN(ForwardResponse predicted, options_.head_worker->Forward(head));
  AddCost(options_.head_worker, HeadKind(spec_), predicted.cost());
  return predicted.loss();
}

absl::Status Trainer::Run() {
  const TrainingSpec& training = spec_.training();
  const absl::Time start = options_.now();
  const int64_t n_train = static_cast<int64_t>(data_->train_starts().size());
  const int64_t batch = training.batch_size();
  int64_t steps_per_epoch = (n_train + batch - 1) / batch;
  // A last batch smaller than the data-parallel width cannot be sharded.
  if (n_train % batch != 0 && n_train % batch < static_cast<int64_t>(workers_.size())) {
    --steps_per_epoch;
  }
  if (training.max_steps_per_epoch() > 0) {
    steps_per_epoch =
        std::min<int64_t>(steps_per_epoch, training.max_steps_per_epoch());
  }
  if (steps_per_epoch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the training split has ", n_train, " samples, fewer than ",
        workers_.size(), " workers need for one step"));
  }
  JobProgress& p = state_.progress;
  p.set_epochs(training.epochs());
  p.set_total_steps(steps_per_epoch * training.epochs());
  RETURN_IF_ERROR(LoadModel());

  int64_t step = 0;
  int64_t samples = 0;
  for (int epoch = 0; epoch < training.epochs(); ++epoch) {
    const double lr = LearningRate(training, epoch);
    p.set_epoch(epoch + 1);
    p.set_learning_rate(lr);
    std::vector<int64_t> order(n_train);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(training.seed() * 1000003 + epoch);
    std::shuffle(order.begin(), order.end(), rng);
    double epoch_sum = 0;
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      if (options_.cancelled()) {
        return absl::CancelledError(absl::StrCat("cancelled at step ", step));
      }
      const int64_t begin = s * batch;
      const int64_t end = std::min<int64_t>(begin + batch, n_train);
      std::vector<int64_t> indices(order.begin() + begin, order.begin() + end);
      double loss = 0;
      RETURN_IF_ERROR(TrainStep(indices, step, lr, &loss));
      ++step;
      samples += end - begin;
      epoch_sum += loss;
      const double elapsed = absl::ToDoubleSeconds(options_.now() - start);
      p.set_step(step);
      p.set_loss(loss);
      p.set_elapsed_s(elapsed);
      p.set_samples_per_s(elapsed > 0 ? samples / elapsed : 0);
      p.set_eta_s(elapsed / step * (p.total_steps() - step));
      Report();
    }
    const double epoch_loss = epoch_sum / steps_per_epoch;
    state_.epoch_losses.push_back(epoch_loss);
    p.set_epoch_loss(epoch_loss);
    if (epoch == 0) p.set_first_epoch_loss(epoch_loss);
    ASSIGN_OR_RETURN(double test_loss, Evaluate());
    p.set_test_loss(test_loss);
    Report();
  }
  return absl::OkStatus();
}

}  // namespace hpt
