#include "coordinator/trainer.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cost_util.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "data/quality_metrics.h"
#include "coordinator/hybrid_plan.h"
#include "coordinator/job_spec.h"
#include "coordinator/model_export.h"
#include "coordinator/rendezvous_store.h"

namespace hpt {
namespace {

// Runs fn(i) for every worker at once; returns the first error, or rather
// the first worker's that is gone: the others' errors (a collective whose
// peer vanished) follow from it.
template <typename Fn>
absl::Status ForEachWorker(size_t n, Fn fn) {
  if (n == 1) return fn(0);
  std::vector<std::future<absl::Status>> futures;
  for (size_t i = 0; i < n; ++i) {
    futures.push_back(std::async(std::launch::async, fn, i));
  }
  absl::Status first, gone, late;
  for (auto& f : futures) {
    absl::Status s = f.get();
    if (first.ok() && !s.ok()) first = s;
    if (gone.ok() && absl::IsUnavailable(s)) gone = s;
    if (late.ok() && absl::IsDeadlineExceeded(s)) late = s;
  }
  return !gone.ok() ? gone : !late.ok() ? late : first;
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

int64_t Bytes(const Tensor& t) { return int64_t(t.data().size()); }

int64_t ChunkBytes(const std::vector<TensorChunk>& chunks) {
  int64_t bytes = 0;
  for (const TensorChunk& c : chunks) bytes += int64_t(c.data().size());
  return bytes;
}

void AccumulateTimeline(const CostTimeline& t, PhaseCost* phase) {
  phase->set_simulated_s(phase->simulated_s() + t.makespan_s());
  phase->set_energy_j(phase->energy_j() + t.total_energy_j());
  auto& busy = *phase->mutable_device_busy_s();
  auto& energy = *phase->mutable_device_energy_j();
  for (const auto& [kind, s] : t.busy_s()) busy[kind] += s;
  for (const auto& [kind, j] : t.energy_j()) energy[kind] += j;
  if (t.transfer_energy_j() > 0) energy["interconnect"] += t.transfer_energy_j();
}

}  // namespace

Trainer::Trainer(std::string job_id, JobSpec spec, const WindowDataset* data,
                 std::vector<WorkerClient*> workers, Options options)
    : job_id_(std::move(job_id)),
      spec_(std::move(spec)),
      data_(data),
      workers_(std::move(workers)),
      options_(std::move(options)) {
  const InterconnectSpec& link = spec_.hpt().interconnect();
  if (link.bandwidth_gb_per_s() > 0) link_.bandwidth_bytes_per_s = link.bandwidth_gb_per_s() * 1e9;
  link_.latency_s = link.latency_us() * 1e-6;
  link_.energy_per_byte_j = link.energy_pj_per_byte() * 1e-12;
  full_cost_.set_phase("full");
  switch_cost_.set_phase("switch");
  switch_cost_.set_first_step(-1);
  switch_cost_.set_last_step(-1);
  lora_cost_.set_phase("lora");
  recovery_cost_.set_phase("recovery");
  recovery_cost_.set_first_step(-1);
  recovery_cost_.set_last_step(-1);
}

Trainer::~Trainer() = default;

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

void Trainer::Record(WorkerClient* worker, const std::string& kind,
                     const std::string& type, const CostReport& cost, int64_t bytes_in,
                     int64_t bytes_out) {
  RecordTask({worker, kind, type, cost, bytes_in, bytes_out});
}

void Trainer::RecordTask(TaskRecord record) {
  hpt::AddCost(record.cost, &state_.cost);
  auto [it, inserted] = cost_index_.try_emplace(record.worker, state_.device_costs.size());
  if (inserted) {
    DeviceCost& d = state_.device_costs.emplace_back();
    d.set_kind(record.kind);
    d.set_worker(record.worker->address());
  }
  DeviceCost& d = state_.device_costs[it->second];
  if (d.device().empty()) d.set_device(record.cost.device());
  d.set_tasks(d.tasks() + 1);
  hpt::AddCost(record.cost, d.mutable_cost());
  switch (chain_) {
    case Chain::kMain: main_tasks_.push_back(std::move(record)); break;
    case Chain::kTrial: trial_tasks_.push_back(std::move(record)); break;
    case Chain::kSwitch: switch_tasks_.push_back(std::move(record)); break;
    case Chain::kRecovery: recovery_tasks_.push_back(std::move(record)); break;
    case Chain::kNone: break;
  }
}

void Trainer::Report() {
  if (options_.on_progress) options_.on_progress(state_);
}

LoadParametersHeader Trainer::GpuHeader(const std::string& job, uint64_t seed_offset) const {
  LoadParametersHeader header;
  header.set_job_id(job);
  *header.mutable_model() = model_;
  *header.mutable_optimizer() = spec_.training().optimizer();
  header.set_init_seed(spec_.training().seed() + seed_offset);
  header.set_num_tokens(static_cast<int32_t>(data_->num_tokens()));
  return header;
}

LoadParametersHeader Trainer::TrialHeader() const {
  LoadParametersHeader header = GpuHeader(job_id_ + "/trial", kTrialSeedOffset);
  *header.mutable_lora() = spec_.hpt().lora();
  header.mutable_lora()->set_reference_job(job_id_);
  return header;
}

absl::Status Trainer::LoadModel() {
  ASSIGN_OR_RETURN(model_, ResolveModelConfig(spec_.model(), data_->input_features(),
                                              data_->output_features()));
  LoadParametersHeader header = GpuHeader(job_id_, 0);
  if (options_.head_worker != nullptr) header.set_gpu_segment("encoder");
  // Every rank initialises from the same seed; JoinGroup then broadcasts
  // rank 0's parameters so replicas are identical whatever the platform.
  std::vector<LoadParametersResponse> loaded(workers_.size());
  RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(loaded[i], workers_[i]->LoadParameters(header, {}));
    return absl::OkStatus();
  }));
  trainable_bytes_ = loaded[0].num_trainable() * int64_t(sizeof(float));
  RETURN_IF_ERROR(JoinGroups());
  if (options_.head_worker != nullptr) {
    // The head's initial weights are the GPU's seeded ones.
    ASSIGN_OR_RETURN(std::vector<TensorChunk> head,
                     workers_[0]->Snapshot(job_id_, {"reduction.0.weight", "reduction.0.bias",
                                                     "head.weight", "head.bias"}));
    RETURN_IF_ERROR(LoadHead(std::move(head), 0));
  }
  return absl::OkStatus();
}

absl::Status Trainer::JoinGroups() {
  if (workers_.size() < 2) return absl::OkStatus();
  if (options_.rendezvous == nullptr) {
    return absl::FailedPreconditionError(
        "data-parallel training needs the coordinator's rendezvous store");
  }
  const std::string prefix =
      absl::StrCat(job_id_, "/", absl::ToUnixNanos(absl::Now()), "/");
  return ForEachWorker(workers_.size(), [&](size_t i) {
    JoinGroupRequest join;
    join.set_job_id(job_id_);
    join.set_rank(static_cast<int32_t>(i));
    join.set_world_size(static_cast<int32_t>(workers_.size()));
    join.set_store_host(options_.rendezvous->host());
    join.set_store_port(options_.rendezvous->port());
    join.set_store_prefix(prefix);
    join.set_timeout_s(options_.join_timeout_s);
    join.set_collective_timeout_s(options_.collective_timeout_s);
    return workers_[i]->JoinGroup(join);
  });
}

absl::Status Trainer::LoadHead(std::vector<TensorChunk> head, int64_t optimizer_steps) {
  const bool trainable = HeadKind(spec_) != "reram";  // ReRAM weights stay frozen
  LoadParametersHeader header;
  header.set_job_id(job_id_);
  *header.mutable_optimizer() = spec_.training().optimizer();
  SegmentSpec& segment = *header.mutable_segment();
  segment.set_name("head");
  header.set_optimizer_steps(optimizer_steps);
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
  Record(options_.head_worker, HeadKind(spec_), "load", loaded.cost(), ChunkBytes(head));
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
  const int64_t encoded_bytes = Bytes(encoded.outputs());
  Record(gpu, "gpu", "forward", encoded.cost(), x.num_bytes(), encoded_bytes);
  ForwardRequest predict;
  predict.mutable_key()->set_job_id(job_id_);
  predict.mutable_key()->set_step(step);
  predict.mutable_key()->set_segment("head");
  *predict.mutable_inputs() = std::move(*encoded.mutable_outputs());
  ToProto(y, "targets", predict.mutable_targets());
  predict.set_train(true);
  ASSIGN_OR_RETURN(ForwardResponse predicted, head->Forward(predict));
  Record(head, kind, "forward", predicted.cost(), encoded_bytes + y.num_bytes());
  const double loss = predicted.loss();
  if (!std::isfinite(loss)) return loss;  // the caller reports it
  BackwardRequest head_back;
  *head_back.mutable_key() = predict.key();
  head_back.set_global_batch_size(x.shape[0]);
  ASSIGN_OR_RETURN(BackwardResponse head_grads, head->Backward(head_back));
  const int64_t grad_bytes = Bytes(head_grads.grad_input());
  Record(head, kind, "backward", head_grads.cost(), 0, grad_bytes);
  BackwardRequest encoder_back;
  *encoder_back.mutable_key() = encode.key();
  encoder_back.set_global_batch_size(x.shape[0]);
  *encoder_back.mutable_grad_output() = std::move(*head_grads.mutable_grad_input());
  ASSIGN_OR_RETURN(BackwardResponse encoder_grads, gpu->Backward(encoder_back));
  Record(gpu, "gpu", "backward", encoder_grads.cost(), grad_bytes);
  for (WorkerClient* w : {gpu, head}) {
    ApplyUpdateRequest update;
    update.set_job_id(job_id_);
    update.set_step(step);
    update.set_learning_rate(learning_rate);
    ASSIGN_OR_RETURN(ApplyUpdateResponse applied, w->ApplyUpdate(update));
    Record(w, w == gpu ? "gpu" : kind, "update", applied.cost());
  }
  return loss;
}

absl::Status Trainer::TrainStep(const std::vector<int64_t>& indices,
                                int64_t step, double learning_rate,
                                double* loss) {
  const int64_t batch = static_cast<int64_t>(indices.size());
  if (options_.head_worker != nullptr || hybrid_ != nullptr) {
    HostTensor x, y;
    data_->Gather(data_->train_starts(), indices, &x, &y);
    if (hybrid_ != nullptr) {
      ASSIGN_OR_RETURN(*loss, hybrid_->Forward(x, &y, step, true, sink_));
      RETURN_IF_ERROR(DivergenceCheck(*loss, step, learning_rate));
      RETURN_IF_ERROR(hybrid_->Backward(step, sink_));
      return hybrid_->Update(step, learning_rate, sink_);
    }
    ASSIGN_OR_RETURN(*loss, HeadStep(x, y, step, learning_rate));
    return DivergenceCheck(*loss, step, learning_rate);
  }
  const std::vector<int64_t> shards = ShardSizes(batch, workers_.size());
  std::vector<ForwardResponse> forwards(workers_.size());
  std::vector<BackwardResponse> backwards(workers_.size());
  std::vector<ApplyUpdateResponse> updates(workers_.size());
  std::vector<int64_t> input_bytes(workers_.size());
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
    input_bytes[i] = x.num_bytes() + y.num_bytes();
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
    Record(workers_[i], "gpu", "forward", forwards[i].cost(), input_bytes[i]);
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
    Record(workers_[i], "gpu", "backward", backwards[i].cost());
  }
  for (size_t i = 0; i < workers_.size(); ++i) {
    Record(workers_[i], "gpu", "update", updates[i].cost());
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Trainer::TrialStep(const HostTensor& x, const HostTensor& y,
                                          int64_t step, double learning_rate) {
  WorkerClient* gpu = workers_[0];
  const std::string trial = job_id_ + "/trial";
  ForwardRequest forward;
  forward.mutable_key()->set_job_id(trial);
  forward.mutable_key()->set_step(step);
  forward.mutable_key()->set_segment("model");
  ToProto(x, "inputs", forward.mutable_inputs());
  ToProto(y, "targets", forward.mutable_targets());
  forward.set_train(true);
  ASSIGN_OR_RETURN(ForwardResponse f, gpu->Forward(forward));
  Record(gpu, "gpu", "forward", f.cost(), x.num_bytes() + y.num_bytes());
  BackwardRequest backward;
  *backward.mutable_key() = forward.key();
  backward.set_global_batch_size(x.shape[0]);
  ASSIGN_OR_RETURN(BackwardResponse b, gpu->Backward(backward));
  Record(gpu, "gpu", "backward", b.cost());
  ApplyUpdateRequest update;
  update.set_job_id(trial);
  update.set_step(step);
  update.set_learning_rate(learning_rate);
  ASSIGN_OR_RETURN(ApplyUpdateResponse u, gpu->ApplyUpdate(update));
  Record(gpu, "gpu", "update", u.cost());
  return f.loss();
}

absl::StatusOr<HostTensor> Trainer::Predict(const HostTensor& x) {
  if (hybrid_ != nullptr) {
    HostTensor prediction;
    RETURN_IF_ERROR(hybrid_->Forward(x, nullptr, -1, false, sink_, &prediction).status());
    return prediction;
  }
  ForwardRequest request;
  request.mutable_key()->set_job_id(job_id_);
  request.mutable_key()->set_step(-1);
  request.mutable_key()->set_segment(options_.head_worker ? "encoder" : "model");
  ToProto(x, "inputs", request.mutable_inputs());
  request.set_train(false);
  request.set_return_outputs(true);
  ASSIGN_OR_RETURN(ForwardResponse response, workers_[0]->Forward(request));
  Record(workers_[0], "gpu", "forward", response.cost(), x.num_bytes());
  if (options_.head_worker != nullptr) {
    ForwardRequest head;
    head.mutable_key()->set_job_id(job_id_);
    head.mutable_key()->set_step(-1);
    head.mutable_key()->set_segment("head");
    *head.mutable_inputs() = std::move(*response.mutable_outputs());
    head.set_train(false);
    head.set_return_outputs(true);
    ASSIGN_OR_RETURN(response, options_.head_worker->Forward(head));
    Record(options_.head_worker, HeadKind(spec_), "forward", response.cost());
  }
  return FromProto(response.outputs(), "ForwardResponse.outputs");
}

int64_t EvalBatchSize(const TrainingSpec& training, const ModelConfig& model, int64_t tokens) {
  if (training.eval_batch_size() > 0) return training.eval_batch_size();
  // No gradients are kept, so one request may carry many samples. Bigger is
  // not faster past a point: each op of a simulated device streams its whole
  // input and output, and once a request's widest activation (token rows x
  // the feed-forward width) outgrows the CPU's caches, every element-wise
  // pass and copy goes to DRAM. On the wind preset (d_model 512, 57 tokens)
  // the test split took 26-28 s at 287 samples a request, 21-22 s at 9-72
  // and 20.4-20.8 s at 36 (//benchmarks:device_step_bench --eval_batch).
  // So: the widest activation near 16 MiB (at most 16 Ki token rows), and
  // the attention weights (samples x heads x tokens^2) within 32 Mi.
  const int64_t t = std::max<int64_t>(1, tokens);
  const int64_t ff_width = int64_t(std::max(1, model.d_model())) *
                           (model.ff_multiplier() > 0 ? model.ff_multiplier() : 4);
  const int64_t rows = std::min<int64_t>(int64_t{16} << 10, (int64_t{4} << 20) / ff_width);
  const int64_t by_rows = rows / t;
  const int64_t by_attention = (int64_t{32} << 20) / (std::max(1, model.num_heads()) * t * t);
  return std::max<int64_t>({int64_t{1}, training.batch_size(), std::min(by_rows, by_attention)});
}

absl::Status Trainer::Evaluate() {
  std::vector<int64_t> starts = data_->test_starts();
  if (spec_.training().max_test_samples() > 0 &&
      int64_t(starts.size()) > spec_.training().max_test_samples()) {
    starts.resize(spec_.training().max_test_samples());
  }
  if (starts.empty()) return absl::OkStatus();
  const int64_t batch = EvalBatchSize(spec_.training(), model_, data_->num_tokens());
  double sum_sq = 0;
  int64_t count = 0;
  QualityAccumulator quality;
  for (int64_t begin = 0; begin < static_cast<int64_t>(starts.size()); begin += batch) {
    std::vector<int64_t> indices;
    for (int64_t i = begin; i < std::min<int64_t>(begin + batch, starts.size()); ++i) {
      indices.push_back(i);
    }
    HostTensor x, y;
    data_->Gather(starts, indices, &x, &y);
    ASSIGN_OR_RETURN(HostTensor prediction, Predict(x));
    if (prediction.data.size() != y.data.size()) {
      return absl::InternalError(absl::StrCat("prediction has shape ",
                                              prediction.ShapeString(), ", targets ",
                                              y.ShapeString()));
    }
    const int64_t tokens = data_->num_tokens();
    for (size_t e = 0; e < y.data.size(); ++e) {
      const double d = double(prediction.data[e]) - y.data[e];
      sum_sq += d * d;
      // Targets are [n, tokens, 1]: undo each token's station's normalisation.
      const int64_t sample = starts[indices[int64_t(e) / tokens]];
      const int64_t station = data_->StationOf(sample, int64_t(e) % tokens);
      const double scale = data_->stddev(station), shift = data_->mean(station);
      quality.Add(prediction.data[e] * scale + shift, y.data[e] * scale + shift);
    }
    count += int64_t(y.data.size());
  }
  state_.progress.set_test_loss(sum_sq / double(count));
  state_.test_metrics = quality.Finish();
  return absl::OkStatus();
}

absl::StatusOr<double> Trainer::WeightDistance() {
  const std::string layer =
      absl::StrCat("layers.", spec_.hpt().weight_layer(), ".self_attn.");
  const std::vector<std::string> names = {layer + "q_proj.weight", layer + "v_proj.weight"};
  ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, workers_[0]->Snapshot(job_id_, names));
  ASSIGN_OR_RETURN(auto tensors, AssembleChunks(chunks));
  std::vector<float> w;
  for (const std::string& name : names) {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      return absl::InternalError(absl::StrCat("the GPU worker did not send '", name, "'"));
    }
    w.insert(w.end(), it->second.data.begin(), it->second.data.end());
  }
  double sq = 0;
  if (last_weights_.size() == w.size()) {
    for (size_t i = 0; i < w.size(); ++i) {
      const double d = double(w[i]) - last_weights_[i];
      sq += d * d;
    }
  }
  last_weights_ = std::move(w);
  return std::sqrt(sq);
}

absl::Status Trainer::StartTrial() {
  WorkerClient* gpu = workers_[0];
  ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, gpu->Snapshot(job_id_, {}));
  ASSIGN_OR_RETURN(LoadParametersResponse loaded, gpu->LoadParameters(TrialHeader(), chunks));
  Record(gpu, "gpu", "load", loaded.cost(), ChunkBytes(chunks));
  trial_active_ = true;
  trial_updates_ = 0;
  state_.hpt.set_phase("trial");
  return absl::OkStatus();
}

absl::Status Trainer::Switch() {
  WorkerClient* gpu = workers_[0];
  gpu->Release(job_id_ + "/trial").IgnoreError();
  trial_active_ = false;
  ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, gpu->Snapshot(job_id_, {}));
  LoadParametersHeader header = GpuHeader(job_id_, kLoraSeedOffset);
  *header.mutable_lora() = spec_.hpt().lora();
  const std::string& placement = spec_.hpt().placement();
  // LoRA is created on the GPU workers first (adapters from the seed, B = 0,
  // auto ranks from the weight change); the device placement takes its
  // tensors from there.
  const size_t reload = placement == "gpu" ? workers_.size() : 1;
  std::vector<LoadParametersResponse> loaded(reload);
  RETURN_IF_ERROR(ForEachWorker(reload, [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(loaded[i], workers_[i]->LoadParameters(header, chunks));
    return absl::OkStatus();
  }));
  for (size_t i = 0; i < reload; ++i) {
    Record(workers_[i], "gpu", "load", loaded[i].cost(), ChunkBytes(chunks));
  }
  trainable_bytes_ = loaded[0].num_trainable() * int64_t(sizeof(float));
  std::map<std::string, int> ranks;
  for (const auto& [name, rank] : loaded[0].lora_ranks()) {
    ranks[name] = rank;
    (*state_.hpt.mutable_lora_ranks())[name] = rank;
  }
  state_.hpt.set_lora_trainable_parameters(loaded[0].num_trainable());
  if (placement == "gpu") {
    RETURN_IF_ERROR(JoinGroups());
  } else {
    ASSIGN_OR_RETURN(std::vector<TensorChunk> lora_chunks, gpu->Snapshot(job_id_, {}));
    ASSIGN_OR_RETURN(auto params, AssembleChunks(lora_chunks));
    params["token_encoding"] = TokenEncodingTable(data_->num_tokens(), model_.d_model());
    RETURN_IF_ERROR(StartHybrid(params, ranks, 0));
    for (WorkerClient* w : workers_) w->Release(job_id_).IgnoreError();
  }
  main_updates_ = 0;  // the LoRA model's optimizer is a fresh one
  phase_ = Phase::kLora;
  state_.hpt.set_phase("lora");
  return absl::OkStatus();
}

absl::Status Trainer::StartHybrid(const std::map<std::string, HostTensor>& params,
                                  const std::map<std::string, int>& ranks,
                                  int64_t optimizer_steps) {
  const std::string& placement = spec_.hpt().placement();
  HybridPlanOptions plan_options;
  plan_options.policy = placement;
  plan_options.reram_workers = int(options_.reram_workers.size());
  plan_options.systolic_workers = int(options_.systolic_workers.size());
  plan_options.seed = spec_.training().seed();
  plan_options.vectors_per_step = int64_t(spec_.training().batch_size()) * data_->num_tokens();
  if (spec_.hpt().reram_chip_tiles() > 0) {
    plan_options.chip.tiles = spec_.hpt().reram_chip_tiles();
  }
  ASSIGN_OR_RETURN(HybridPlan plan, PlanHybrid(model_, spec_.hpt().lora(), ranks, plan_options));
  state_.hpt.clear_reram_layers();
  for (const ReramPlacement& r : plan.reram_layers) {
    ReramLayerPlacement& out = *state_.hpt.add_reram_layers();
    out.set_layer(r.layer);
    out.set_worker(r.worker);
    out.set_in_features(r.in_features);
    out.set_out_features(r.out_features);
    out.set_duplication(r.duplication);
    out.set_tiles(r.tiles);
  }
  hybrid_ = std::make_unique<HybridRunner>(job_id_, std::move(plan), options_.reram_workers,
                                           options_.systolic_workers,
                                           spec_.training().optimizer());
  return hybrid_->Load(params, sink_, optimizer_steps);
}

void Trainer::RecordEvents() {
  const std::vector<ControllerEvent>& events = controller_->events();
  const int64_t now_ms = absl::ToUnixMillis(options_.now());
  for (; events_seen_ < events.size(); ++events_seen_) {
    const ControllerEvent& e = events[events_seen_];
    PhaseEvent& out = *state_.hpt.add_events();
    out.set_iteration(e.iteration);
    out.set_time_unix_ms(now_ms);
    out.set_reason(e.reason);
    switch (e.kind) {
      case ControllerEvent::Kind::kCheck:
        out.set_kind(PhaseEvent::CHECK);
        for (double l : e.losses) out.add_window_losses(l);
        for (double d : e.distances) out.add_weight_distances(d);
        out.set_loss_passed(e.loss_passed);
        out.set_weight_passed(e.weight_passed);
        break;
      case ControllerEvent::Kind::kTrialStart:
        out.set_kind(PhaseEvent::TRIAL_START);
        break;
      case ControllerEvent::Kind::kTrialEnd:
        out.set_kind(PhaseEvent::TRIAL_END);
        out.set_t(e.t_test.t);
        out.set_p(e.t_test.p_value);
        out.set_dof(e.t_test.degrees_of_freedom);
        out.set_mean_full(e.t_test.mean_a);
        out.set_mean_lora(e.t_test.mean_b);
        out.set_significant(e.significant);
        break;
      case ControllerEvent::Kind::kSwitch:
        out.set_kind(PhaseEvent::SWITCH);
        break;
    }
  }
}

void Trainer::LayTasks(const std::vector<TaskRecord>& tasks, bool data_parallel,
                       CostTimeline* timeline) const {
  // `share` of the task (a pipeline piece) on its resource.
  auto add = [&](const TaskRecord& t, const std::vector<int>& deps, int64_t bytes,
                 double share = 1.0) {
    return timeline->Add(t.resource.empty() ? t.worker->address() : t.resource, t.kind,
                         t.cost.simulated_s() * share, t.cost.energy_j() * share, deps,
                         bytes);
  };
  if (data_parallel) {
    // Ranks run concurrently; every update waits for all backwards and the
    // ring allreduce moves 2 (n - 1) / n of the gradient into each rank.
    const double n = double(workers_.size());
    const int64_t allreduce = int64_t(2 * (n - 1) / n * double(trainable_bytes_));
    std::map<WorkerClient*, int> forward;
    std::vector<int> backwards;
    for (const TaskRecord& t : tasks) {
      if (t.type == "forward") {
        forward[t.worker] = add(t, {}, t.bytes_in);
      } else if (t.type == "backward") {
        auto it = forward.find(t.worker);
        backwards.push_back(add(t, it == forward.end() ? std::vector<int>{}
                                                        : std::vector<int>{it->second},
                                0));
      } else {
        add(t, backwards, allreduce);
      }
    }
    return;
  }
  const bool pipelined = std::any_of(tasks.begin(), tasks.end(),
                                     [](const TaskRecord& t) { return t.samples > 1; });
  if (pipelined) {
    // Device segments process samples independently (attention mixes
    // tokens, not samples): each task of the chain becomes one piece per
    // sample, piece b after piece b of the task before, so segments on
    // different devices (and ReRAM segments in their own tiles) overlap
    // like a pipeline across the batch (PipeLayer, Song et al., HPCA 2017).
    // A piece costs the task's 1/B. Updates wait for every last piece.
    std::vector<int> previous_pieces, last_backward_pieces;
    for (const TaskRecord& t : tasks) {
      if (t.type == "update") {
        const std::vector<int>& deps =
            last_backward_pieces.empty() ? previous_pieces : last_backward_pieces;
        add(t, deps, 0);
        continue;
      }
      const int64_t pieces = std::max<int64_t>(1, t.samples);
      std::vector<int> ids(pieces);
      for (int64_t b = 0; b < pieces; ++b) {
        std::vector<int> deps;
        if (!previous_pieces.empty()) {
          deps.push_back(previous_pieces[std::min<size_t>(b, previous_pieces.size() - 1)]);
        }
        const double share = 1.0 / double(pieces);
        ids[b] = add(t, deps, int64_t(double(t.bytes_in) * share), share);
      }
      previous_pieces = ids;
      if (t.type == "backward") last_backward_pieces = ids;
    }
    return;
  }
  // A chain: each forward or backward after the one before; updates after
  // the last backward, concurrently on their devices.
  int previous = -1, last_backward = -1;
  for (const TaskRecord& t : tasks) {
    if (t.type == "update") {
      const int dep = last_backward >= 0 ? last_backward : previous;
      add(t, dep >= 0 ? std::vector<int>{dep} : std::vector<int>{}, 0);
      continue;
    }
    previous = add(t, previous >= 0 ? std::vector<int>{previous} : std::vector<int>{},
                   t.bytes_in);
    if (t.type == "backward") last_backward = previous;
  }
}

void Trainer::CloseStep(int64_t step, bool lora_step) {
  const double wall = absl::ToDoubleSeconds(options_.now() - step_start_);
  // The step's main tasks ran data-parallel unless they ran on devices.
  const bool data_parallel = workers_.size() > 1 && options_.head_worker == nullptr &&
                             !(lora_step && hybrid_ != nullptr);
  CostTimeline all(link_);
  LayTasks(main_tasks_, data_parallel, &all);
  LayTasks(trial_tasks_, false, &all);
  PhaseCost& phase = lora_step ? lora_cost_ : full_cost_;
  if ((lora_step ? lora_steps_ : full_steps_) == 0) phase.set_first_step(step);
  phase.set_last_step(step);
  phase.set_wall_s(phase.wall_s() + wall);
  AccumulateTimeline(all, &phase);
  if (lora_step) {
    ++lora_steps_;
  } else {
    // GPU-only counts the step without its trial tasks; without a trial
    // that is the timeline just laid.
    CostTimeline main_only(link_);
    const CostTimeline* gpu_only = &all;
    if (!trial_tasks_.empty()) {
      LayTasks(main_tasks_, data_parallel, &main_only);
      gpu_only = &main_only;
    }
    gpu_only_full_s_ += gpu_only->makespan_s();
    gpu_only_full_j_ += gpu_only->total_energy_j();
    ++full_steps_;
  }
  if (!switch_tasks_.empty()) {
    CostTimeline programming(link_);
    LayTasks(switch_tasks_, false, &programming);
    AccumulateTimeline(programming, &switch_cost_);
    switch_cost_.set_first_step(step);
    switch_cost_.set_last_step(step);
  }
  main_tasks_.clear();
  trial_tasks_.clear();
  switch_tasks_.clear();
  UpdateComparison();
}

void Trainer::UpdateComparison() {
  HptStatus& h = state_.hpt;
  h.clear_phases();
  if (full_steps_ > 0) *h.add_phases() = full_cost_;
  if (switch_cost_.simulated_s() > 0 || switch_cost_.energy_j() > 0) {
    *h.add_phases() = switch_cost_;
  }
  if (lora_steps_ > 0) *h.add_phases() = lora_cost_;
  if (recovery_cost_.simulated_s() > 0 || recovery_cost_.energy_j() > 0) {
    *h.add_phases() = recovery_cost_;
  }
  const double hpt_s = full_cost_.simulated_s() + switch_cost_.simulated_s() +
                       lora_cost_.simulated_s() + recovery_cost_.simulated_s();
  const double hpt_j = full_cost_.energy_j() + switch_cost_.energy_j() + lora_cost_.energy_j() +
                       recovery_cost_.energy_j();
  const double mean_s = full_steps_ > 0 ? gpu_only_full_s_ / double(full_steps_) : 0;
  const double mean_j = full_steps_ > 0 ? gpu_only_full_j_ / double(full_steps_) : 0;
  CostComparison& c = *h.mutable_comparison();
  c.set_hpt_time_s(hpt_s);
  c.set_hpt_energy_j(hpt_j);
  c.set_gpu_only_time_s(gpu_only_full_s_ + mean_s * double(lora_steps_));
  c.set_gpu_only_energy_j(gpu_only_full_j_ + mean_j * double(lora_steps_));
  c.set_time_ratio(hpt_s > 0 ? c.gpu_only_time_s() / hpt_s : 0);
  c.set_energy_ratio(hpt_j > 0 ? c.gpu_only_energy_j() / hpt_j : 0);
  c.set_method(absl::StrCat(
      "simulated training steps on the cost timeline (evaluation excluded). GPU-only = "
      "the ", full_steps_, " full-phase steps as run, without trial tasks (measured), + ",
      lora_steps_, " steps after the switch at the mean full-phase step (",
      mean_s, " s, ", mean_j, " J; projected). HpT = full phase with trials + switch "
      "(LoRA loads, ReRAM programming) + LoRA-phase steps, all as run",
      recovery_cost_.simulated_s() > 0 || recovery_cost_.energy_j() > 0
          ? ", + recovery (re-loading devices after a restart or failover)."
          : "."));

  // The paper's length: every epoch of the data at this batch size.
  const double epochs = spec_.hpt().project_epochs();
  const int64_t n = int64_t(std::ceil(epochs * double(steps_per_epoch_)));
  c.set_project_epochs(epochs);
  c.set_project_steps(n);
  c.set_full_step_s(mean_s);
  c.set_full_step_j(mean_j);
  if (full_steps_ > 0) {
    c.set_full_step_with_trials_s(full_cost_.simulated_s() / double(full_steps_));
    c.set_full_step_with_trials_j(full_cost_.energy_j() / double(full_steps_));
  }
  const double lora_mean_s = lora_steps_ > 0 ? lora_cost_.simulated_s() / lora_steps_ : 0;
  const double lora_mean_j = lora_steps_ > 0 ? lora_cost_.energy_j() / lora_steps_ : 0;
  c.set_lora_step_s(lora_mean_s);
  c.set_lora_step_j(lora_mean_j);
  const bool switched = h.switch_step() >= 0 && lora_steps_ > 0;
  const int64_t before = switched ? std::min<int64_t>(h.switch_step(), n) : n;
  c.set_projected_gpu_only_time_s(mean_s * double(n));
  c.set_projected_gpu_only_energy_j(mean_j * double(n));
  if (switched) {
    // The full phase as run (with trials, per step) up to the switch, the
    // switch once, then LoRA-phase steps at their mean.
    const double full_step_s = full_cost_.simulated_s() / double(full_steps_);
    const double full_step_j = full_cost_.energy_j() / double(full_steps_);
    c.set_projected_hpt_time_s(full_step_s * double(before) + switch_cost_.simulated_s() +
                               lora_mean_s * double(n - before));
    c.set_projected_hpt_energy_j(full_step_j * double(before) + switch_cost_.energy_j() +
                                 lora_mean_j * double(n - before));
  } else {
    c.set_projected_hpt_time_s(c.projected_gpu_only_time_s());
    c.set_projected_hpt_energy_j(c.projected_gpu_only_energy_j());
  }
  c.set_projected_time_ratio(c.projected_hpt_time_s() > 0
                                 ? c.projected_gpu_only_time_s() / c.projected_hpt_time_s()
                                 : 0);
  c.set_projected_energy_ratio(c.projected_hpt_energy_j() > 0
                                   ? c.projected_gpu_only_energy_j() / c.projected_hpt_energy_j()
                                   : 0);
  c.set_projection_method(absl::StrCat(
      epochs, " epochs x ", steps_per_epoch_, " steps = ", n, " steps; ",
      switched ? absl::StrCat("HpT: ", before, " full-phase steps at their mean with trials (",
                              full_cost_.simulated_s() / double(full_steps_), " s), the switch, ",
                              n - before, " LoRA-phase steps at their mean (", lora_mean_s,
                              " s)")
               : "no switch yet: HpT is full-parameter throughout",
      "; GPU-only: ", n, " steps at the mean full-phase step (", mean_s, " s)."));

  // Where the time goes.
  c.clear_time_notes();
  double kernels = 0, launch_bound_s = 0, gpu_s = 0, reram_s = 0, systolic_s = 0, stall = 0,
         cycles = 0;
  for (const DeviceCost& d : state_.device_costs) {
    const auto& k = d.cost().counters();
    auto get = [&](const char* name) {
      auto it = k.find(name);
      return it == k.end() ? 0.0 : it->second;
    };
    if (d.kind() == "gpu") {
      kernels += get("kernels");
      launch_bound_s += get("launch_bound_s");
      gpu_s += d.cost().simulated_s();
    } else if (d.kind() == "reram") {
      reram_s += d.cost().simulated_s();
    } else if (d.kind() == "systolic") {
      systolic_s += d.cost().simulated_s();
      stall += get("stall_cycles");
      cycles += get("cycles");
    }
  }
  if (gpu_s > 0) {
    c.add_time_notes(absl::StrFormat(
        "GPU: %.0f kernels, %.0f %% of its %.3g s in kernel launches (a step of small "
        "kernels is launch-bound)",
        kernels, 100 * launch_bound_s / gpu_s, gpu_s));
  }
  if (reram_s > 0 || systolic_s > 0) {
    c.add_time_notes(absl::StrFormat(
        "LoRA phase: ReRAM reads %.3g s (in parallel across layers' tiles), systolic %.3g s "
        "(%.0f %% of its cycles DRAM stalls)",
        reram_s, systolic_s, cycles > 0 ? 100 * stall / cycles : 0.0));
  }
  const double transfer_j = (full_cost_.device_energy_j().count("interconnect")
                                 ? full_cost_.device_energy_j().at("interconnect")
                                 : 0) +
                            (lora_cost_.device_energy_j().count("interconnect")
                                 ? lora_cost_.device_energy_j().at("interconnect")
                                 : 0);
  if (transfer_j > 0) {
    c.add_time_notes(absl::StrFormat("transfers between devices: %.3g J", transfer_j));
  }
}

absl::StatusOr<Checkpoint> Trainer::MakeCheckpoint(int64_t step, const std::string& reason) {
  Checkpoint c;
  CheckpointHeader& h = c.header;
  h.set_job_id(job_id_);
  h.set_step(step);
  h.set_time_unix_ms(absl::ToUnixMillis(options_.now()));
  h.set_reason(reason);
  h.set_phase(state_.hpt.phase().empty() ? "full" : state_.hpt.phase());
  *h.mutable_model() = model_;
  h.set_steps_per_epoch(steps_per_epoch_);
  *h.mutable_progress() = state_.progress;
  for (double l : state_.epoch_losses) h.add_epoch_losses(l);
  *h.mutable_cost() = state_.cost;
  for (const DeviceCost& d : state_.device_costs) *h.add_device_costs() = d;
  *h.mutable_test_metrics() = state_.test_metrics;
  *h.mutable_hpt() = state_.hpt;
  h.set_epoch_loss_sum(epoch_sum_);
  h.set_samples(samples_);
  if (controller_ != nullptr) {
    const PhaseController::State s = controller_->state();
    PhaseControllerState& out = *h.mutable_controller();
    out.set_phase(int(s.phase));
    out.set_window_loss_sum(s.window_loss_sum);
    out.set_window_count(s.window_count);
    for (double v : s.window_losses) out.add_window_losses(v);
    for (double v : s.distances) out.add_distances(v);
    for (double v : s.trial_full) out.add_trial_full(v);
    for (double v : s.trial_lora) out.add_trial_lora(v);
    out.set_switch_iteration(s.switch_iteration);
  }
  for (float w : last_weights_) h.add_last_weights(w);
  h.set_trial_active(trial_active_);
  h.set_main_updates(main_updates_);
  h.set_trial_updates(trial_updates_);
  h.set_trainable_bytes(trainable_bytes_);
  *h.mutable_full_cost() = full_cost_;
  *h.mutable_switch_cost() = switch_cost_;
  *h.mutable_lora_cost() = lora_cost_;
  *h.mutable_recovery_cost() = recovery_cost_;
  h.set_gpu_only_full_s(gpu_only_full_s_);
  h.set_gpu_only_full_j(gpu_only_full_j_);
  h.set_full_steps(full_steps_);
  h.set_lora_steps(lora_steps_);
  h.set_elapsed_s(absl::ToDoubleSeconds(options_.now() - start_));

  auto take = [&](const std::string& prefix, std::map<std::string, HostTensor> tensors) {
    for (auto& [name, t] : tensors) c.tensors[prefix + name] = std::move(t);
  };
  if (hybrid_ != nullptr) {
    ASSIGN_OR_RETURN(auto params, hybrid_->Parameters(/*optimizer_state=*/true));
    take("model/", std::move(params));
    return c;
  }
  auto snapshot = [&](WorkerClient* worker, const std::string& job,
                      const std::string& prefix) -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, worker->Snapshot(job, {}, true));
    ASSIGN_OR_RETURN(auto tensors, AssembleChunks(chunks));
    take(prefix, std::move(tensors));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(snapshot(workers_[0], job_id_, "model/"));
  if (options_.head_worker != nullptr) {
    RETURN_IF_ERROR(snapshot(options_.head_worker, job_id_, "head/"));
  }
  if (trial_active_) RETURN_IF_ERROR(snapshot(workers_[0], job_id_ + "/trial", "trial/"));
  return c;
}

absl::Status Trainer::SaveCheckpoint(int64_t step, const std::string& reason) {
  if (!options_.on_checkpoint) return absl::OkStatus();
  ASSIGN_OR_RETURN(Checkpoint c, MakeCheckpoint(step, reason));
  options_.on_checkpoint(std::move(c));
  return absl::OkStatus();
}

absl::Status Trainer::Restore(const Checkpoint& checkpoint) {
  const CheckpointHeader& h = checkpoint.header;
  if (h.job_id() != job_id_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the checkpoint is job ", h.job_id(), "'s, not ", job_id_, "'s"));
  }
  if (h.steps_per_epoch() != steps_per_epoch_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the checkpoint at step ", h.step(), " was made with ", h.steps_per_epoch(),
        " steps per epoch; the job now has ", steps_per_epoch_,
        " (its data or batch size changed)"));
  }
  model_ = h.model();
  state_.progress = h.progress();
  state_.epoch_losses.assign(h.epoch_losses().begin(), h.epoch_losses().end());
  state_.cost = h.cost();
  state_.device_costs.assign(h.device_costs().begin(), h.device_costs().end());
  state_.test_metrics = h.test_metrics();
  state_.hpt = h.hpt();
  epoch_sum_ = h.epoch_loss_sum();
  samples_ = h.samples();
  last_weights_.assign(h.last_weights().begin(), h.last_weights().end());
  trial_active_ = h.trial_active();
  main_updates_ = h.main_updates();
  trial_updates_ = h.trial_updates();
  trainable_bytes_ = h.trainable_bytes();
  full_cost_ = h.full_cost();
  switch_cost_ = h.switch_cost();
  lora_cost_ = h.lora_cost();
  recovery_cost_ = h.recovery_cost();
  recovery_cost_.set_phase("recovery");
  gpu_only_full_s_ = h.gpu_only_full_s();
  gpu_only_full_j_ = h.gpu_only_full_j();
  full_steps_ = h.full_steps();
  lora_steps_ = h.lora_steps();
  start_ = options_.now() - absl::Seconds(h.elapsed_s());
  phase_ = h.phase() == "lora" ? Phase::kLora : Phase::kFull;
  if (controller_ != nullptr) {
    const PhaseControllerState& in = h.controller();
    PhaseController::State s;
    s.phase = TrainingPhase(in.phase());
    s.window_loss_sum = in.window_loss_sum();
    s.window_count = in.window_count();
    s.window_losses.assign(in.window_losses().begin(), in.window_losses().end());
    s.distances.assign(in.distances().begin(), in.distances().end());
    s.trial_full.assign(in.trial_full().begin(), in.trial_full().end());
    s.trial_lora.assign(in.trial_lora().begin(), in.trial_lora().end());
    s.switch_iteration = in.switch_iteration();
    controller_->Restore(std::move(s));
    events_seen_ = 0;
  }
  // This run's workers take over the costs of the ones they replace where
  // the address is the same.
  cost_index_.clear();
  std::vector<WorkerClient*> all = workers_;
  for (auto* list : {&options_.reram_workers, &options_.systolic_workers}) {
    all.insert(all.end(), list->begin(), list->end());
  }
  if (options_.head_worker != nullptr) all.push_back(options_.head_worker);
  for (WorkerClient* w : all) {
    for (size_t i = 0; i < state_.device_costs.size(); ++i) {
      if (state_.device_costs[i].worker() == w->address()) cost_index_[w] = i;
    }
  }

  chain_ = Chain::kRecovery;
  const std::map<std::string, HostTensor> model = TensorsUnder(checkpoint, "model/");
  if (model.empty()) {
    return absl::DataLossError(absl::StrCat("the checkpoint at step ", h.step(),
                                            " holds no model parameters"));
  }
  if (phase_ == Phase::kLora && spec_.hpt().placement() != "gpu") {
    std::map<std::string, int> ranks(h.hpt().lora_ranks().begin(), h.hpt().lora_ranks().end());
    RETURN_IF_ERROR(StartHybrid(model, ranks, main_updates_));
  } else {
    LoadParametersHeader header = GpuHeader(job_id_, phase_ == Phase::kLora ? kLoraSeedOffset : 0);
    header.set_optimizer_steps(main_updates_);
    if (phase_ == Phase::kLora) *header.mutable_lora() = spec_.hpt().lora();
    if (options_.head_worker != nullptr) header.set_gpu_segment("encoder");
    const std::vector<TensorChunk> chunks = SplitTensors(model);
    RETURN_IF_ERROR(ForEachWorker(workers_.size(), [&](size_t i) -> absl::Status {
      return workers_[i]->LoadParameters(header, chunks).status();
    }));
    RETURN_IF_ERROR(JoinGroups());
    if (options_.head_worker != nullptr) {
      RETURN_IF_ERROR(LoadHead(SplitTensors(TensorsUnder(checkpoint, "head/")), main_updates_));
    }
    if (trial_active_) {
      LoadParametersHeader trial = TrialHeader();
      trial.set_optimizer_steps(trial_updates_);
      RETURN_IF_ERROR(
          workers_[0]->LoadParameters(trial, SplitTensors(TensorsUnder(checkpoint, "trial/"))).status());
    }
  }
  chain_ = Chain::kNone;
  if (!recovery_tasks_.empty()) {
    CostTimeline reload(link_);
    LayTasks(recovery_tasks_, false, &reload);
    AccumulateTimeline(reload, &recovery_cost_);
    recovery_cost_.set_first_step(h.step());
    recovery_cost_.set_last_step(h.step());
    recovery_tasks_.clear();
  }
  UpdateComparison();
  return absl::OkStatus();
}

absl::Status Trainer::CollectTrainedModel() {
  std::map<std::string, HostTensor> params;
  if (hybrid_ != nullptr) {
    ASSIGN_OR_RETURN(params, hybrid_->Parameters());
  } else if (options_.head_worker != nullptr) {
    // The GPU's copy of the head is stale: the head worker's is trained.
    ASSIGN_OR_RETURN(std::vector<TensorChunk> encoder, workers_[0]->Snapshot(job_id_, {}));
    ASSIGN_OR_RETURN(params, AssembleChunks(encoder));
    ASSIGN_OR_RETURN(std::vector<TensorChunk> head,
                     options_.head_worker->Snapshot(job_id_, {}));
    ASSIGN_OR_RETURN(auto head_params, AssembleChunks(head));
    for (auto& [name, t] : head_params) params[name] = std::move(t);
  } else {
    ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks, workers_[0]->Snapshot(job_id_, {}));
    ASSIGN_OR_RETURN(params, AssembleChunks(chunks));
  }
  ASSIGN_OR_RETURN(trained_.parameters,
                   MergeLoraTensors(std::move(params), spec_.hpt().lora().alpha()));
  trained_.config = model_;
  return absl::OkStatus();
}

absl::Status Trainer::Run() {
  const TrainingSpec& training = spec_.training();
  start_ = options_.now();
  const int64_t n_train = static_cast<int64_t>(data_->train_starts().size());
  const int64_t batch = training.batch_size();
  int64_t steps_per_epoch = (n_train + batch - 1) / batch;
  // A last batch smaller than the data-parallel width cannot be sharded.
  // (The width asked for, not the workers this run has: a failover that
  // shrinks the group keeps the epoch's steps.)
  const int64_t width = std::max<int64_t>(spec_.placement().gpu_workers(), 1);
  if (n_train % batch != 0 && n_train % batch < width) {
    --steps_per_epoch;
  }
  if (training.max_steps_per_epoch() > 0) {
    steps_per_epoch =
        std::min<int64_t>(steps_per_epoch, training.max_steps_per_epoch());
  }
  steps_per_epoch_ = steps_per_epoch;
  if (steps_per_epoch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the training split has ", n_train, " samples, fewer than ",
        workers_.size(), " workers need for one step"));
  }
  JobProgress& p = state_.progress;
  p.set_epochs(training.epochs());
  p.set_total_steps(steps_per_epoch * training.epochs());
  hpt_ = spec_.hpt().mode() == "hpt";
  state_.hpt.set_phase("full");
  state_.hpt.set_switch_step(-1);
  state_.hpt.set_window(spec_.hpt().window_steps());
  state_.hpt.set_window_samples(spec_.hpt().window());
  state_.hpt.set_batch_size(training.batch_size());
  state_.hpt.set_placement(hpt_ ? spec_.hpt().placement() : "gpu");
  if (hpt_) {
    PhaseControllerOptions controller;
    controller.window = spec_.hpt().window_steps();
    controller.loss_threshold = spec_.hpt().loss_threshold();
    controller.weight_threshold = spec_.hpt().weight_threshold();
    controller.alpha = spec_.hpt().alpha();
    controller.trial_on_rising_loss = spec_.hpt().trial_on_rising_loss();
    controller_ = std::make_unique<PhaseController>(controller);
  }
  int64_t step = 0;
  if (options_.resume != nullptr) {
    RETURN_IF_ERROR(Restore(*options_.resume));
    step = options_.resume->header.step();
  } else {
    RETURN_IF_ERROR(LoadModel());
    if (hpt_) RETURN_IF_ERROR(WeightDistance().status());  // W at the start
  }
  const int64_t first_step = step;
  std::string checkpoint_due;  // a reason, at the end of the epoch's evaluation
  for (int epoch = int(step / steps_per_epoch); epoch < training.epochs(); ++epoch) {
    const double lr = LearningRate(training, epoch);
    p.set_epoch(epoch + 1);
    p.set_learning_rate(lr);
    std::vector<int64_t> order(n_train);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(training.seed() * 1000003 + epoch);
    std::shuffle(order.begin(), order.end(), rng);
    const int64_t first_s = step == first_step ? step % steps_per_epoch : 0;
    if (first_s == 0) epoch_sum_ = 0;
    for (int64_t s = first_s; s < steps_per_epoch; ++s) {
      if (options_.cancelled()) {
        return absl::CancelledError(absl::StrCat("cancelled at step ", step));
      }
      step_start_ = options_.now();
      const bool lora_step = phase_ == Phase::kLora;
      const int64_t begin = s * batch;
      const int64_t end = std::min<int64_t>(begin + batch, n_train);
      std::vector<int64_t> indices(order.begin() + begin, order.begin() + end);
      double loss = 0;
      chain_ = Chain::kMain;
      RETURN_IF_ERROR(TrainStep(indices, step, lr, &loss));
      ++main_updates_;
      bool switched = false;
      if (hpt_ && phase_ == Phase::kFull) {
        double trial_loss = 0;
        if (trial_active_) {
          chain_ = Chain::kTrial;
          HostTensor x, y;
          data_->Gather(data_->train_starts(), indices, &x, &y);
          ASSIGN_OR_RETURN(trial_loss, TrialStep(x, y, step, lr));
          ++trial_updates_;
        }
        chain_ = Chain::kNone;
        double distance = 0;
        if (controller_->NeedsWeightDistance(step)) {
          ASSIGN_OR_RETURN(distance, WeightDistance());
        }
        const PhaseController::Action action =
            controller_->Step(step, loss, trial_loss, distance);
        RecordEvents();
        if (action == PhaseController::Action::kStartTrial ||
            action == PhaseController::Action::kRestartTrial) {
          chain_ = Chain::kTrial;
          RETURN_IF_ERROR(StartTrial());
        } else if (action == PhaseController::Action::kSwitch) {
          chain_ = Chain::kSwitch;
          RETURN_IF_ERROR(Switch());
          state_.hpt.set_switch_step(step + 1);
          switched = true;
        } else if (controller_->phase() == TrainingPhase::kFull) {
          state_.hpt.set_phase("full");
        }
      }
      chain_ = Chain::kNone;
      CloseStep(step, lora_step);
      ++step;
      samples_ += end - begin;
      epoch_sum_ += loss;
      const double elapsed = absl::ToDoubleSeconds(options_.now() - start_);
      p.set_step(step);
      p.set_loss(loss);
      p.set_elapsed_s(elapsed);
      p.set_samples_per_s(elapsed > 0 ? samples_ / elapsed : 0);
      p.set_eta_s(elapsed / step * (p.total_steps() - step));
      Report();
      // A checkpoint at the epoch's last step waits for its evaluation, so
      // the epoch's loss and test metrics are in it.
      if (switched) {
        checkpoint_due = "phase switch";
      } else if (options_.checkpoint_every > 0 && step % options_.checkpoint_every == 0) {
        checkpoint_due = absl::StrCat("every ", options_.checkpoint_every, " steps");
      }
      if (!checkpoint_due.empty() && s + 1 < steps_per_epoch) {
        RETURN_IF_ERROR(SaveCheckpoint(step, checkpoint_due));
        checkpoint_due.clear();
      }
    }
    const double epoch_loss = epoch_sum_ / steps_per_epoch;
    state_.epoch_losses.push_back(epoch_loss);
    p.set_epoch_loss(epoch_loss);
    if (epoch == 0) p.set_first_epoch_loss(epoch_loss);
    RETURN_IF_ERROR(Evaluate());
    Report();
    if (!checkpoint_due.empty() && epoch + 1 < training.epochs()) {
      RETURN_IF_ERROR(SaveCheckpoint(step, checkpoint_due));
    }
    checkpoint_due.clear();
  }
  if (trial_active_) workers_[0]->Release(job_id_ + "/trial").IgnoreError();
  RETURN_IF_ERROR(CollectTrainedModel());
  return absl::OkStatus();
}

}  // namespace hpt
