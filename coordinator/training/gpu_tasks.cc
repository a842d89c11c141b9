#include "coordinator/training/gpu_tasks.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/launch_mode.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "coordinator/dispatch/for_each_worker.h"

namespace hpt {
namespace {

int64_t Bytes(const Tensor& t) { return int64_t(t.data().size()); }

}  // namespace

GpuTasks::GpuTasks(std::string job_id, std::vector<WorkerClient*> workers,
                   WorkerClient* head_worker, DeviceKind::Name head_kind, Launch::Mode launch,
                   const TaskSink* sink)
    : job_id_(std::move(job_id)),
      trial_job_(job_id_ + "/trial"),
      workers_(std::move(workers)),
      head_(head_worker),
      head_kind_(head_kind),
      launch_(LaunchOrEager(launch)),
      sink_(sink) {}

std::vector<int64_t> GpuTasks::ShardSizes(int64_t batch, int workers) {
  std::vector<int64_t> sizes(workers, batch / workers);
  for (int64_t i = 0; i < batch % workers; ++i) ++sizes[i];
  return sizes;
}

void GpuTasks::Record(WorkerClient* worker, DeviceKind::Name kind, const std::string& type,
                      const CostReport& cost, int64_t bytes_in, int64_t bytes_out) const {
  (*sink_)(MakeFinishedTask(AddressOf(worker), kind, type, cost, bytes_in, bytes_out));
}

TaskKey GpuTasks::Key(const std::string& job, int64_t step, const std::string& segment) {
  TaskKey key;  // micro-batch 0: a step is one micro-batch per worker
  key.set_job_id(job);
  key.set_step(step);
  key.set_segment(segment);
  return key;
}

ForwardRequest GpuTasks::MakeForward(const std::string& job, int64_t step,
                                     const std::string& segment, bool train) {
  ForwardRequest request;
  *request.mutable_key() = Key(job, step, segment);
  request.set_train(train);
  return request;
}

absl::StatusOr<ApplyUpdateResponse> GpuTasks::Update(WorkerClient* worker,
                                                     const std::string& job, int64_t step,
                                                     double learning_rate) const {
  ApplyUpdateRequest request;
  request.set_job_id(job);
  request.set_step(step);
  request.set_learning_rate(learning_rate);
  return worker->ApplyUpdate(request);
}

absl::StatusOr<double> GpuTasks::DataParallelStep(const WindowDataset& data,
                                                  const std::vector<int64_t>& indices,
                                                  int64_t step, double learning_rate) {
  const int64_t batch = static_cast<int64_t>(indices.size());
  const size_t n = workers_.size();
  const std::vector<int64_t> shards = ShardSizes(batch, int(n));
  std::vector<ForwardResponse> forwards(n);
  std::vector<BackwardResponse> backwards(n);
  std::vector<ApplyUpdateResponse> updates(n);
  std::vector<int64_t> input_bytes(n);
  RETURN_IF_ERROR(ForEachWorker(n, [&](size_t i) -> absl::Status {
    const int64_t begin = std::accumulate(shards.begin(), shards.begin() + i, int64_t{0});
    std::vector<int64_t> mine(indices.begin() + begin, indices.begin() + begin + shards[i]);
    HostTensor x, y;
    data.Gather(data.train_starts(), mine, &x, &y);
    input_bytes[i] = x.num_bytes() + y.num_bytes();
    ForwardRequest request = MakeForward(job_id_, step, "model", true);
    ToProto(x, "inputs", request.mutable_inputs());
    ToProto(y, "targets", request.mutable_targets());
    ASSIGN_OR_RETURN(forwards[i], workers_[i]->Forward(request));
    return absl::OkStatus();
  }));
  double weighted = 0;
  for (size_t i = 0; i < n; ++i) {
    weighted += forwards[i].loss() * shards[i];
    Record(workers_[i], DeviceKind::gpu, "forward", forwards[i].cost(), input_bytes[i]);
  }
  const double loss = weighted / batch;
  if (!std::isfinite(loss)) return loss;  // the caller reports it
  RETURN_IF_ERROR(ForEachWorker(n, [&](size_t i) -> absl::Status {
    BackwardRequest request;
    *request.mutable_key() = Key(job_id_, step, "model");
    request.set_global_batch_size(batch);
    ASSIGN_OR_RETURN(backwards[i], workers_[i]->Backward(request));
    return absl::OkStatus();
  }));
  RETURN_IF_ERROR(ForEachWorker(n, [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(updates[i], Update(workers_[i], job_id_, step, learning_rate));
    return absl::OkStatus();
  }));
  for (size_t i = 0; i < n; ++i)
    Record(workers_[i], DeviceKind::gpu, "backward", backwards[i].cost());
  for (size_t i = 0; i < n; ++i) Record(workers_[i], DeviceKind::gpu, "update", updates[i].cost());
  return loss;
}

SampleSource GpuTasks::SamplesOf(const WindowDataset& data) {
  SampleSource source;
  const TimeSeriesMatrix& series = data.normalized_series();
  source.set_rows(series.rows);
  source.set_columns(series.columns);
  source.set_input_steps(data.options().input_steps);
  source.set_horizon(data.options().horizon);
  source.set_tokens(data.num_tokens());
  source.set_groups(data.num_groups());
  source.set_group_stride(data.options().group_stride);
  return source;
}

std::vector<TensorChunk> GpuTasks::SampleChunks(const WindowDataset& data) {
  const TimeSeriesMatrix& series = data.normalized_series();
  return SplitIntoChunks(kSamplesTensor, {series.rows, series.columns}, series.values.data(),
                         kDefaultChunkBytes);
}

absl::StatusOr<GpuTasks::Run> GpuTasks::DataParallelRun(
    const WindowDataset& data, int64_t first_step,
    const std::vector<std::vector<int64_t>>& batches, const std::vector<double>& rates,
    double trial_rate) {
  const size_t n = workers_.size();
  Run run;
  run.first_step = first_step;
  const int64_t batch = int64_t(batches.at(0).size());
  run.shards = ShardSizes(batch, int(n));
  run.responses.resize(n);
  RETURN_IF_ERROR(ForEachWorker(n, [&](size_t i) -> absl::Status {
    const int64_t begin = std::accumulate(run.shards.begin(), run.shards.begin() + i, int64_t{0});
    TrainRunRequest request;
    request.set_job_id(job_id_);
    request.set_first_step(first_step);
    request.set_launch(launch_);
    for (size_t j = 0; j < batches.size(); ++j) {
      RunStep* step = request.add_steps();
      for (int64_t k = begin; k < begin + run.shards[i]; ++k) {
        step->add_samples(data.train_starts()[batches[j][k]]);
      }
      step->set_global_batch_size(batch);
      step->set_learning_rate(rates[j]);
      if (trial_rate > 0 && i == 0) {
        RunStep* trial = request.add_trial_steps();
        for (int64_t k : batches[j]) trial->add_samples(data.train_starts()[k]);
        trial->set_global_batch_size(batch);
        trial->set_learning_rate(trial_rate);
      }
    }
    if (trial_rate > 0 && i == 0) request.set_trial_job(trial_job_);
    ASSIGN_OR_RETURN(run.responses[i], workers_[i]->TrainRun(request));
    if (trial_rate > 0 && i == 0 && run.responses[0].trial_losses_size() != request.steps_size()) {
      return absl::InternalError(absl::StrCat(
          "GPU worker ", AddressOf(workers_[0]), " answered a trial of ", batches.size(),
          " steps with ", run.responses[0].trial_losses_size(), " losses"));
    }
    if (run.responses[i].losses_size() != int(batches.size())) {
      return absl::InternalError(absl::StrCat(
          "GPU worker ", AddressOf(workers_[i]), " answered a run of ", batches.size(),
          " steps with ", run.responses[i].losses_size(), " losses"));
    }
    return absl::OkStatus();
  }));
  for (size_t j = 0; j < batches.size(); ++j) {
    double weighted = 0;
    for (size_t i = 0; i < n; ++i) weighted += run.responses[i].losses(int(j)) * run.shards[i];
    run.losses.push_back(weighted / batch);
  }
  if (trial_rate > 0) {
    run.trial_losses.assign(run.responses[0].trial_losses().begin(),
                            run.responses[0].trial_losses().end());
  }
  return run;
}

void GpuTasks::RecordRunStep(const Run& run) const {
  for (size_t i = 0; i < workers_.size(); ++i) {
    // What a step sends is its sample ids, not their windows.
    Record(workers_[i], DeviceKind::gpu, "forward", run.responses[i].forward(),
           run.shards[i] * int64_t(sizeof(int64_t)));
  }
  for (size_t i = 0; i < workers_.size(); ++i) {
    Record(workers_[i], DeviceKind::gpu, "backward", run.responses[i].backward());
  }
  for (size_t i = 0; i < workers_.size(); ++i) {
    Record(workers_[i], DeviceKind::gpu, "update", run.responses[i].update());
  }
}

void GpuTasks::RecordRunTrialStep(const Run& run) const {
  const TrainRunResponse& r = run.responses[0];
  const int64_t batch = std::accumulate(run.shards.begin(), run.shards.end(), int64_t{0});
  Record(workers_[0], DeviceKind::gpu, "forward", r.trial_forward(),
         batch * int64_t(sizeof(int64_t)));
  Record(workers_[0], DeviceKind::gpu, "backward", r.trial_backward());
  Record(workers_[0], DeviceKind::gpu, "update", r.trial_update());
}

absl::StatusOr<double> GpuTasks::HeadStep(const HostTensor& x, const HostTensor& y,
                                          int64_t step, double learning_rate) {
  WorkerClient* gpu = workers_[0];
  ForwardRequest encode = MakeForward(job_id_, step, "encoder", true);
  ToProto(x, "inputs", encode.mutable_inputs());
  ASSIGN_OR_RETURN(ForwardResponse encoded, gpu->Forward(encode));
  const int64_t encoded_bytes = Bytes(encoded.outputs());
  Record(gpu, DeviceKind::gpu, "forward", encoded.cost(), x.num_bytes(), encoded_bytes);
  ForwardRequest predict = MakeForward(job_id_, step, "head", true);
  *predict.mutable_inputs() = std::move(*encoded.mutable_outputs());
  ToProto(y, "targets", predict.mutable_targets());
  ASSIGN_OR_RETURN(ForwardResponse predicted, head_->Forward(predict));
  Record(head_, head_kind_, "forward", predicted.cost(), encoded_bytes + y.num_bytes());
  const double loss = predicted.loss();
  if (!std::isfinite(loss)) return loss;  // the caller reports it
  BackwardRequest head_back;
  *head_back.mutable_key() = predict.key();
  head_back.set_global_batch_size(x.shape[0]);
  ASSIGN_OR_RETURN(BackwardResponse head_grads, head_->Backward(head_back));
  const int64_t grad_bytes = Bytes(head_grads.grad_input());
  Record(head_, head_kind_, "backward", head_grads.cost(), 0, grad_bytes);
  BackwardRequest encoder_back;
  *encoder_back.mutable_key() = encode.key();
  encoder_back.set_global_batch_size(x.shape[0]);
  *encoder_back.mutable_grad_output() = std::move(*head_grads.mutable_grad_input());
  ASSIGN_OR_RETURN(BackwardResponse encoder_grads, gpu->Backward(encoder_back));
  Record(gpu, DeviceKind::gpu, "backward", encoder_grads.cost(), grad_bytes);
  for (WorkerClient* w : {gpu, head_}) {
    ASSIGN_OR_RETURN(ApplyUpdateResponse applied, Update(w, job_id_, step, learning_rate));
    Record(w, w == gpu ? DeviceKind::gpu : head_kind_, "update", applied.cost());
  }
  return loss;
}

absl::StatusOr<double> GpuTasks::TrialStep(const HostTensor& x, const HostTensor& y,
                                           int64_t step, double learning_rate) {
  WorkerClient* gpu = workers_[0];
  ForwardRequest forward = MakeForward(trial_job_, step, "model", true);
  ToProto(x, "inputs", forward.mutable_inputs());
  ToProto(y, "targets", forward.mutable_targets());
  ASSIGN_OR_RETURN(ForwardResponse f, gpu->Forward(forward));
  Record(gpu, DeviceKind::gpu, "forward", f.cost(), x.num_bytes() + y.num_bytes());
  BackwardRequest backward;
  *backward.mutable_key() = forward.key();
  backward.set_global_batch_size(x.shape[0]);
  ASSIGN_OR_RETURN(BackwardResponse b, gpu->Backward(backward));
  Record(gpu, DeviceKind::gpu, "backward", b.cost());
  ASSIGN_OR_RETURN(ApplyUpdateResponse u, Update(gpu, trial_job_, step, learning_rate));
  Record(gpu, DeviceKind::gpu, "update", u.cost());
  return f.loss();
}

absl::StatusOr<HostTensor> GpuTasks::Predict(const HostTensor& x) {
  ForwardRequest request = MakeForward(job_id_, -1, head_ ? "encoder" : "model", false);
  ToProto(x, "inputs", request.mutable_inputs());
  request.set_return_outputs(true);
  ASSIGN_OR_RETURN(ForwardResponse response, workers_[0]->Forward(request));
  Record(workers_[0], DeviceKind::gpu, "forward", response.cost(), x.num_bytes());
  if (head_ != nullptr) {
    ForwardRequest head = MakeForward(job_id_, -1, "head", false);
    *head.mutable_inputs() = std::move(*response.mutable_outputs());
    head.set_return_outputs(true);
    ASSIGN_OR_RETURN(response, head_->Forward(head));
    Record(head_, head_kind_, "forward", response.cost());
  }
  return FromProto(response.outputs(), "ForwardResponse.outputs");
}

}  // namespace hpt
