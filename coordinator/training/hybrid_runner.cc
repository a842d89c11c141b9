#include "coordinator/training/hybrid_runner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"

namespace hpt {
namespace {

void AddInto(HostTensor& acc, const HostTensor& g) {
  for (size_t i = 0; i < acc.data.size(); ++i) acc.data[i] += g.data[i];
}

}  // namespace

HybridRunner::HybridRunner(std::string job_id, HybridPlan plan,
                           std::vector<WorkerClient*> reram,
                           std::vector<WorkerClient*> systolic, OptimizerConfig optimizer)
    : job_id_(std::move(job_id)),
      plan_(std::move(plan)),
      reram_(std::move(reram)),
      systolic_(std::move(systolic)),
      optimizer_(std::move(optimizer)) {
  for (size_t i = 0; i < plan_.segments.size(); ++i) {
    for (const std::string& name : plan_.segments[i].spec.inputs()) last_reader_[name] = i;
  }
}

std::string HybridRunner::Resource(const PlannedSegment& segment,
                                   WorkerClient* worker) const {
  // ReRAM segments hold their layers in tiles of their own and read
  // independently of the chip's other segments; a systolic array is one.
  return segment.kind == DeviceKind::reram ? worker->address() + "/" + segment.spec.name()
                                           : worker->address();
}

WorkerClient* HybridRunner::WorkerOf(const PlannedSegment& segment) const {
  const std::vector<WorkerClient*>& pool = segment.kind == DeviceKind::reram ? reram_ : systolic_;
  return pool[segment.worker % pool.size()];
}

std::vector<WorkerClient*> HybridRunner::Workers() const {
  std::vector<WorkerClient*> workers;
  for (const PlannedSegment& s : plan_.segments) {
    WorkerClient* w = WorkerOf(s);
    if (std::find(workers.begin(), workers.end(), w) == workers.end()) workers.push_back(w);
  }
  return workers;
}

absl::Status HybridRunner::Load(const std::map<std::string, HostTensor>& params,
                                const TaskSink& sink, int64_t optimizer_steps,
                                const std::map<std::string, int64_t>& steps_by_prefix) {
  if (reram_.empty() || systolic_.empty()) {
    return absl::FailedPreconditionError(
        "the LoRA phase's device placement needs a reram and a systolic worker");
  }
  for (const PlannedSegment& segment : plan_.segments) {
    LoadParametersHeader header;
    header.set_job_id(job_id_);
    *header.mutable_optimizer() = optimizer_;
    *header.mutable_segment() = segment.spec;
    header.set_optimizer_steps(optimizer_steps);
    header.mutable_optimizer_steps_by_prefix()->insert(steps_by_prefix.begin(),
                                                       steps_by_prefix.end());
    std::vector<TensorChunk> chunks;
    int64_t bytes = 0;
    auto add = [&](const std::string& name, const HostTensor& t) {
      bytes += t.num_bytes();
      for (TensorChunk& c : SplitIntoChunks(name, t.shape, t.data.data(), kDefaultChunkBytes)) {
        chunks.push_back(std::move(c));
      }
    };
    for (const std::string& name : segment.params) {
      auto it = params.find(name);
      if (it == params.end()) {
        return absl::InternalError(absl::StrCat("segment '", segment.spec.name(),
                                                "' needs parameter '", name,
                                                "', which the model does not have"));
      }
      add(name, it->second);
      // Its state from a checkpoint: "<name>@exp_avg", "@exp_avg_sq",
      // "@reram_read" (worker_service.proto).
      const std::string prefix = name + "@";
      for (auto state = params.lower_bound(prefix);
           state != params.end() && state->first.compare(0, prefix.size(), prefix) == 0;
           ++state) {
        add(state->first, state->second);
      }
    }
    WorkerClient* worker = WorkerOf(segment);
    ASSIGN_OR_RETURN(LoadParametersResponse loaded, worker->LoadParameters(header, chunks));
    if (sink) sink(MakeFinishedTask(AddressOf(worker), segment.kind, "load", loaded.cost(), bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> HybridRunner::Forward(const HostTensor& inputs,
                                             const HostTensor* targets, int64_t step,
                                             bool train, const TaskSink& sink,
                                             HostTensor* prediction) {
  // Values travel between segments as the Tensor messages the workers
  // returned: moved into the next request that reads them (copied only for
  // readers before the last), never decoded here but for the prediction.
  std::map<std::string, Tensor> values;
  ToProto(inputs, plan_.input, &values[plan_.input]);
  if (train) samples_ = inputs.shape.empty() ? 1 : std::max<int64_t>(1, inputs.shape[0]);
  double loss = 0;
  for (size_t i = 0; i < plan_.segments.size(); ++i) {
    const PlannedSegment& segment = plan_.segments[i];
    const bool last = i + 1 == plan_.segments.size();
    ForwardRequest request;
    request.mutable_key()->set_job_id(job_id_);
    request.mutable_key()->set_step(step);
    request.mutable_key()->set_segment(segment.spec.name());
    request.set_train(train);
    int64_t bytes_in = 0;
    for (const std::string& name : segment.spec.inputs()) {
      auto it = values.find(name);
      if (it == values.end()) {
        return absl::InternalError(absl::StrCat("segment '", segment.spec.name(),
                                                "' reads '", name, "', which no segment made"));
      }
      Tensor* sent = request.add_values();
      bytes_in += int64_t(it->second.data().size());
      // A value goes to its last reader by move, so a forward holds a few
      // activations, not all of them.
      if (last_reader_.at(name) == i && name != plan_.prediction) {
        sent->Swap(&it->second);
        values.erase(it);
      } else {
        *sent = it->second;
      }
    }
    if (last && targets != nullptr) {
      ToProto(*targets, "targets", request.mutable_targets());
      bytes_in += targets->num_bytes();
    }
    request.set_return_outputs(!last || prediction != nullptr);
    WorkerClient* worker = WorkerOf(segment);
    ASSIGN_OR_RETURN(ForwardResponse response, worker->TakeForward(std::move(request)));
    int64_t bytes_out = 0;
    for (Tensor& t : *response.mutable_values()) {
      RETURN_IF_ERROR(ValidateTensorProto(t, "ForwardResponse.values"));
      bytes_out += int64_t(t.data().size());
      const std::string name = t.name();
      values[name].Swap(&t);
    }
    if (sink) {
      sink({AddressOf(worker), segment.kind, "forward", response.cost(), bytes_in, bytes_out,
            Resource(segment, worker), train ? samples_ : 1});
    }
    if (last) loss = response.loss();
  }
  if (prediction != nullptr) {
    auto it = values.find(plan_.prediction);
    if (it == values.end()) {
      return absl::InternalError("the last segment returned no prediction");
    }
    ASSIGN_OR_RETURN(*prediction, FromProto(std::move(it->second), "ForwardResponse.values"));
  }
  return loss;
}

absl::Status HybridRunner::Backward(int64_t step, const TaskSink& sink,
                                    HostTensor* input_grad) {
  std::map<std::string, HostTensor> grads;
  grad_norm_sq_ = 0;
  segment_grad_norms_.assign(plan_.segments.size(), 0.0);
  for (int i = int(plan_.segments.size()) - 1; i >= 0; --i) {
    const PlannedSegment& segment = plan_.segments[i];
    BackwardRequest request;
    request.mutable_key()->set_job_id(job_id_);
    request.mutable_key()->set_step(step);
    request.mutable_key()->set_segment(segment.spec.name());
    int64_t bytes_in = 0;
    for (const std::string& name : segment.spec.outputs()) {
      auto it = grads.find(name);
      if (it == grads.end()) continue;  // the loss, or nothing downstream
      bytes_in += it->second.num_bytes();
      ToProto(std::move(it->second), name, request.add_grad_values());
      grads.erase(it);
    }
    WorkerClient* worker = WorkerOf(segment);
    ASSIGN_OR_RETURN(BackwardResponse response, worker->TakeBackward(std::move(request)));
    int64_t bytes_out = 0;
    for (Tensor& t : *response.mutable_grad_values()) {
      ASSIGN_OR_RETURN(HostTensor g, FromProto(std::move(t), "BackwardResponse.grad_values"));
      bytes_out += g.num_bytes();
      auto [it, inserted] = grads.try_emplace(t.name(), std::move(g));
      if (!inserted) AddInto(it->second, g);
    }
    segment_grad_norms_[i] = response.grad_norm();
    grad_norm_sq_ += response.grad_norm() * response.grad_norm();
    if (sink) {
      sink({AddressOf(worker), segment.kind, "backward", response.cost(), bytes_in, bytes_out,
            Resource(segment, worker), samples_});
    }
  }
  if (input_grad != nullptr) {
    auto it = grads.find(plan_.input);
    if (it == grads.end()) return absl::InternalError("no gradient reached the input");
    *input_grad = std::move(it->second);
  }
  return absl::OkStatus();
}

absl::Status HybridRunner::Update(int64_t step, double learning_rate,
                                  const TaskSink& sink) {
  for (WorkerClient* worker : Workers()) {
    ApplyUpdateRequest request;
    request.set_job_id(job_id_);
    request.set_step(step);
    request.set_learning_rate(learning_rate);
    ASSIGN_OR_RETURN(ApplyUpdateResponse applied, worker->ApplyUpdate(request));
    if (sink) sink(MakeFinishedTask(AddressOf(worker), applied.cost().device_kind(), "update", applied.cost()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, HostTensor>> HybridRunner::Parameters(
    bool optimizer_state, const std::vector<std::string>& names) {
  ChunkAssembler assembler;
  for (WorkerClient* worker : Workers()) {
    ASSIGN_OR_RETURN(std::vector<TensorChunk> chunks,
                     worker->Snapshot(job_id_, names, optimizer_state));
    for (const TensorChunk& c : chunks) RETURN_IF_ERROR(assembler.Add(c));
  }
  return assembler.Finish();
}

void HybridRunner::Release() {
  for (WorkerClient* worker : Workers()) worker->Release(job_id_).IgnoreError();
}

}  // namespace hpt
