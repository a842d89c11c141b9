// The GPU executor's task-by-task step: Forward, Backward and
// ApplyUpdate, each timed on the device and costed from its kernels (a run
// of whole steps is gpu_run.h's). The rest of GpuExecutor is in
// gpu_executor.cc.
#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "workers/gpu/bf16_autocast.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/gpu/gpu_executor_impl.h"

namespace hpt {

absl::StatusOr<ForwardResponse> GpuExecutor::Forward(
    const ForwardRequest& request) {
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<GpuSession*> found = impl_->jobs.Find(request.key().job_id());
  if (!found.ok()) return found.status();
  GpuSession& session = **found;
  const std::string shape = ForwardShapeKey(
      std::vector<int64_t>(request.inputs().shape().begin(), request.inputs().shape().end()),
      request.train(), request.targets().shape_size() > 0, request.return_outputs());
  return Guarded("Forward", [&]() -> absl::StatusOr<ForwardResponse> {
    impl_->meter->Start();
    std::unique_ptr<KernelRecorder> recorder = session.kernels.Begin(shape);
    absl::StatusOr<torch::Tensor> inputs =
        DecodeBatch(request.inputs(), "ForwardRequest.inputs",
                    session.config.input_features(), impl_->device);
    if (!inputs.ok()) return inputs.status();
    const bool has_targets = request.targets().shape_size() > 0;
    torch::Tensor targets;
    if (has_targets) {
      absl::StatusOr<torch::Tensor> t =
          DecodeBatch(request.targets(), "ForwardRequest.targets",
                      session.config.output_features(), impl_->device);
      if (!t.ok()) return t.status();
      if (t->size(0) != inputs->size(0) || t->size(1) != inputs->size(1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ForwardRequest.targets shape ", ShapeString(t->sizes()),
            " does not match inputs ", ShapeString(inputs->sizes())));
      }
      targets = *t;
    } else if (request.train() && !session.encoder_only) {
      return absl::InvalidArgumentError(
          "ForwardRequest.targets is empty but train is set");
    }
    ForwardResponse response;
    const int64_t batch = inputs->size(0);
    response.set_num_samples(batch);
    if (request.train()) {
      torch::manual_seed(DropoutSeed(session.seed, request.key().step(),
                                     request.key().micro_batch(),
                                     session.group ? session.group->getRank() : 0));
    }
    torch::Tensor outputs;
    // The forward under bf16 autocast for a bf16 job; backward runs
    // outside it, as with torch.autocast.
    Bf16Autocast autocast(impl_->device, session.bf16);
    if (session.encoder_only) {
      // The loss is computed downstream: hand the encoder output on.
      if (request.train()) {
        session.model->train();
        outputs = session.model->Encode(*inputs);
        session.tasks.AddPending(request.key(), GpuPending{{}, outputs, batch});
      } else {
        torch::NoGradGuard no_grad;
        session.model->eval();
        outputs = session.model->Encode(*inputs);
      }
      torch::Tensor cpu = outputs.detach().to(torch::kCPU, torch::kFloat).contiguous();
      FloatsToProto(cpu.data_ptr<float>(),
                    std::vector<int64_t>(cpu.sizes().begin(), cpu.sizes().end()),
                    "outputs", response.mutable_outputs());
    } else if (request.train()) {
      session.model->train();
      outputs = session.model->forward(*inputs);
      torch::Tensor loss = MseLoss(outputs, targets);
      response.set_loss(loss.item<double>());
      session.tasks.AddPending(request.key(), GpuPending{loss, {}, batch});
    } else {
      torch::NoGradGuard no_grad;
      session.model->eval();
      outputs = session.model->forward(*inputs);
      if (has_targets) response.set_loss(MseLoss(outputs, targets).item<double>());
    }
    if (request.return_outputs() && !session.encoder_only) {
      torch::Tensor cpu = outputs.detach().to(torch::kCPU, torch::kFloat).contiguous();
      FloatsToProto(cpu.data_ptr<float>(),
                    std::vector<int64_t>(cpu.sizes().begin(), cpu.sizes().end()),
                    "outputs", response.mutable_outputs());
    }
    impl_->Sync();
    if (request.train()) {
      session.last_batch = batch;
      session.last_tokens = inputs->size(1);
    }
    impl_->Cost("forward", session, session.kernels.End(shape, std::move(recorder)),
                impl_->meter->Stop(), response.mutable_cost());
    return response;
  });
}

absl::StatusOr<BackwardResponse> GpuExecutor::Backward(
    const BackwardRequest& request) {
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<GpuSession*> found = impl_->jobs.Find(request.key().job_id());
  if (!found.ok()) return found.status();
  GpuSession& session = **found;
  if (const BackwardResponse* done = session.tasks.Answered(request.key())) {
    return *done;  // a retry: the gradient is already accumulated
  }
  absl::StatusOr<GpuPending*> waiting = session.tasks.FindPending(request.key());
  if (!waiting.ok()) return waiting.status();
  GpuPending& pending = **waiting;
  const int64_t global_batch = request.global_batch_size() > 0
                                   ? request.global_batch_size()
                                   : pending.batch;
  if (global_batch < pending.batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BackwardRequest.global_batch_size ", global_batch,
        " is smaller than this micro-batch (", pending.batch, ")"));
  }
  const std::string shape =
      BackwardShapeKey(pending.batch, pending.output.defined(), bool(session.group));
  return Guarded("Backward", [&]() -> absl::StatusOr<BackwardResponse> {
    impl_->meter->Start();
    std::unique_ptr<KernelRecorder> recorder = session.kernels.Begin(shape);
    if (pending.output.defined()) {
      absl::StatusOr<HostTensor> grad =
          FromProto(request.grad_output(), "BackwardRequest.grad_output");
      if (!grad.ok()) return grad.status();
      if (c10::IntArrayRef(grad->shape) != pending.output.sizes()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "BackwardRequest.grad_output has shape ", grad->ShapeString(),
            "; the encoder output is ", ShapeString(pending.output.sizes())));
      }
      pending.output.backward(ToTorch(*grad, impl_->device));
    } else {
      const double weight = double(pending.batch) / double(global_batch);
      (pending.loss * weight).backward();
    }
    session.tasks.Forget(request.key());
    std::vector<torch::Tensor> params;
    for (const auto& p : session.model->parameters()) {
      if (p.requires_grad()) params.push_back(p);
    }
    // One flat buffer, one allreduce: far cheaper than one per tensor.
    if (session.group) AllReduceGradients(session, params);
    // One read of each gradient, no temporaries.
    double sum_sq = 0;
    for (auto& p : params) {
      if (!p.grad().defined()) continue;
      const double n = p.grad().norm().item<double>();
      sum_sq += n * n;
    }
    impl_->Sync();
    BackwardResponse response;
    response.set_grad_norm(std::sqrt(sum_sq));
    impl_->Cost("backward", session, session.kernels.End(shape, std::move(recorder)),
                impl_->meter->Stop(), response.mutable_cost());
    session.tasks.Answer(request.key(), response);
    return response;
  });
}

absl::StatusOr<ApplyUpdateResponse> GpuExecutor::ApplyUpdate(
    const ApplyUpdateRequest& request) {
  if (absl::Status rate = CheckLearningRate(request); !rate.ok()) return rate;
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<GpuSession*> found = impl_->jobs.Find(request.job_id());
  if (!found.ok()) return found.status();
  GpuSession& session = **found;
  ApplyUpdateResponse response;
  response.mutable_cost()->set_device_kind(DeviceKind::gpu);
  response.mutable_cost()->set_device(impl_->device_name);
  if (session.tasks.Applied(request.step())) {
    response.set_applied(false);  // a retry of an update already applied
    return response;
  }
  return Guarded("ApplyUpdate", [&]() -> absl::StatusOr<ApplyUpdateResponse> {
    const std::vector<int64_t> stepped = SteppedNumels(session);
    const std::string shape = UpdateShapeKey(stepped);
    impl_->meter->Start();
    std::unique_ptr<KernelRecorder> recorder = session.kernels.Begin(shape);
    SetLearningRate(session, request.learning_rate());
    session.optimizer->step();
    session.optimizer->zero_grad();
    session.tasks.Apply(request.step());
    impl_->Sync();
    response.set_applied(true);
    impl_->Cost("update", session, session.kernels.End(shape, std::move(recorder)),
                impl_->meter->Stop(), response.mutable_cost(), stepped);
    return response;
  });
}

}  // namespace hpt
