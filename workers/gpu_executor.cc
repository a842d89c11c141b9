#include "workers/gpu_executor.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "devices/cost_settings.h"
#include "devices/gpu/kernel_cost.h"
#include "devices/gpu/roofline.h"
#include "devices/work_cost.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "workers/baseline_probe.h"
#include "workers/bf16_autocast.h"
#include "workers/device_meter.h"
#include "workers/gpu_run.h"
#include "workers/gpu_session.h"
#include "workers/kernel_recorder.h"
#include "workers/nccl_group.h"
#include "workers/task_book.h"

namespace hpt {
namespace {

// Decodes a wire tensor into a device tensor, checking its shape.
absl::StatusOr<torch::Tensor> DecodeBatch(const Tensor& proto,
                                          const std::string& field,
                                          int64_t last_dim,
                                          const torch::Device& device) {
  absl::StatusOr<HostTensor> host = FromProto(proto, field);
  if (!host.ok()) return host.status();
  if (host->shape.size() != 3 || host->shape[2] != last_dim ||
      host->shape[0] < 1 || host->shape[1] < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " must have shape [batch, tokens, ", last_dim, "], got ",
        host->ShapeString()));
  }
  return ToTorch(*host, device);
}

// Runs `fn`, turning LibTorch exceptions into INTERNAL errors so a bad task
// never takes the worker down.
template <typename Fn>
auto Guarded(const char* what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat(what, " failed in LibTorch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, " failed: ", e.what()));
  }
}

}  // namespace

struct GpuExecutor::Impl {
  Options options;
  torch::Device device{torch::kCPU};
  std::string device_name;  // device.str(), noting an auto choice without CUDA
  std::string device_id;    // Options::device_id, or the CUDA device's UUID

  DeviceCostConfig cost_config;  // the reference GPU (devices/cost_settings.h)
  std::map<std::string, std::string> settings;
  // The same for a bf16 session: products at the reference's bf16 rate.
  DeviceCostConfig bf16_cost_config;
  std::map<std::string, std::string> bf16_settings;
  // Times each task on the device (CUDA events and NVML; the CPU's wall).
  std::unique_ptr<DeviceMeter> meter;

  // Measured time and energy (`measured`: the task's span, the device
  // synchronised), and the cost of the kernels the task ran on the
  // reference GPU, from their work (devices/work_cost.h). `optimizer`: the
  // parameters an update stepped, for the fused baselines.
  void Cost(const std::string& task_type, const GpuSession& session,
            const std::vector<GpuKernel>& kernels, const DeviceMeter::Reading& measured,
            CostReport* cost, const std::vector<int64_t>& optimizer_numel = {}) {
    const bool bf16 = session.bf16;
    TaskWork work;
    AddKernels(kernels, &work);
    for (int64_t n : optimizer_numel) work.add_optimizer_numel(n);
    work.set_state_bytes(session.state_bytes);
    *cost = CostTaskWork(work, bf16 ? bf16_cost_config : cost_config, GpuBaseline::kPaper,
                         nullptr, task_type);
    cost->set_device(device_name);
    cost->set_measured_s(measured.s);
    cost->set_measured_j(measured.j);
    cost->set_measured_by(meter->measured_by());
    cost->set_device_name(meter->device_name());
    const auto& s = bf16 ? bf16_settings : settings;
    work.mutable_settings()->insert(s.begin(), s.end());
    *cost->mutable_work() = std::move(work);
  }
  void HostSync(const std::string& what) {
    if (options.on_host_sync) options.on_host_sync(what);
  }

  mutable absl::Mutex mu;
  JobTable<GpuSession> jobs ABSL_GUARDED_BY(mu){"has no parameters on this worker"};
  // Each job's resident training samples (LoadParametersHeader.samples).
  std::map<std::string, std::shared_ptr<const ResidentSamples>> samples ABSL_GUARDED_BY(mu);

  void Sync() {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  }
};

GpuExecutor::GpuExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuExecutor::~GpuExecutor() = default;

absl::StatusOr<std::unique_ptr<GpuExecutor>> GpuExecutor::Create(
    const Options& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  absl::StatusOr<GpuSpec> reference = GpuProfileOrPreset(options.reference_gpu);
  if (!reference.ok()) return reference.status();
  impl->cost_config = DefaultDeviceCostConfig("gpu");
  impl->cost_config.gpu = *reference;
  impl->settings = DeviceSettingsOf(impl->cost_config);
  impl->bf16_cost_config = impl->cost_config;
  impl->bf16_cost_config.gpu_precision = GpuPrecision::kBf16;
  impl->bf16_settings = DeviceSettingsOf(impl->bf16_cost_config);
  if (options.device == "auto") {
    impl->device = torch::cuda::is_available() ? torch::Device("cuda:0")
                                               : torch::Device(torch::kCPU);
  } else {
    try {
      impl->device = torch::Device(options.device);
    } catch (const c10::Error&) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", options.device, "' is not cpu, cuda:N or auto"));
    }
    if (impl->device.is_cuda() && !torch::cuda::is_available()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device '", options.device, "' asked for, but CUDA is not available"));
    }
  }
  impl->device_name = impl->device.str();
  if (options.device == "auto" && !impl->device.is_cuda()) {
    impl->device_name += " (CUDA not found)";
  }
  impl->device_id = options.device_id;
  if (impl->device_id.empty() && impl->device.is_cuda()) {
    try {
      impl->device_id = CudaDeviceUuid(impl->device.has_index() ? impl->device.index() : 0);
    } catch (const c10::Error& e) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device '", impl->device.str(), "': cannot read its UUID: ", e.what_without_backtrace()));
    }
  }
  if (options.intra_op_threads > 0) {
    torch::set_num_threads(options.intra_op_threads);
  }
  impl->meter = DeviceMeter::Create(impl->device.str(),
                                    impl->device.is_cuda() ? impl->device_id : "");
  return std::unique_ptr<GpuExecutor>(new GpuExecutor(std::move(impl)));
}

std::string GpuExecutor::device_name() const { return impl_->device_name; }
std::string GpuExecutor::device_id() const { return impl_->device_id; }

absl::StatusOr<LoadParametersResponse> GpuExecutor::Load(
    const LoadParametersHeader& header,
    std::map<std::string, HostTensor> parameters) {
  if (header.job_id().empty()) {
    return absl::InvalidArgumentError("LoadParametersHeader.job_id is empty");
  }
  if (absl::Status s = ValidateModelConfig(header.model()); !s.ok()) return s;
  const std::string& segment = header.gpu_segment();
  if (!segment.empty() && segment != "model" && segment != "encoder") {
    return absl::InvalidArgumentError(absl::StrCat(
        "LoadParametersHeader.gpu_segment '", segment,
        "' is not model or encoder"));
  }
  const OptimizerConfig& opt = header.optimizer();
  if (!(opt.learning_rate() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer.learning_rate must be positive, got ", opt.learning_rate()));
  }
  absl::MutexLock lock(&impl_->mu);
  return Guarded("LoadParameters", [&]() -> absl::StatusOr<LoadParametersResponse> {
    // Initial projection weights come from an earlier load of this job (or
    // of the reference job).
    const std::string& reference =
        header.lora().reference_job().empty() ? header.job_id() : header.lora().reference_job();
    LoadParametersResponse response;
    if (header.has_samples()) {
      auto series = parameters.extract(kSamplesTensor);
      if (series.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "LoadParametersHeader.samples is set but no tensor '", kSamplesTensor, "' was sent"));
      }
      ASSIGN_OR_RETURN(ResidentSamples resident,
                       MakeResidentSamples(header.samples(), series.mapped(), impl_->device));
      impl_->samples[header.job_id()] = std::make_shared<const ResidentSamples>(std::move(resident));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<GpuSession> session,
                     BuildGpuSession(header, std::move(parameters), impl_->jobs.Get(reference),
                                     impl_->device, &response));
    impl_->jobs.Put(header.job_id(), std::move(session));
    return response;
  });
}

absl::Status GpuExecutor::JoinGroup(const JoinGroupRequest& request) {
  if (request.world_size() < 1 || request.rank() < 0 ||
      request.rank() >= request.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "JoinGroupRequest.rank ", request.rank(), " is not in [0, world_size ",
        request.world_size(), ")"));
  }
  if (request.store_port() <= 0 || request.store_port() > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "JoinGroupRequest.store_port ", request.store_port(), " is invalid"));
  }
  if (!request.backend().empty() && request.backend() != "gloo") {
    return absl::InvalidArgumentError(absl::StrCat(
        "JoinGroupRequest.backend '", request.backend(), "' is not empty or gloo"));
  }
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<GpuSession*> session = impl_->jobs.Find(request.job_id());
  if (!session.ok()) return session.status();
  return Guarded("JoinGroup", [&]() -> absl::Status {
    JoinGpuGroup(**session, request, impl_->device, impl_->options.gloo_host);
    (*session)->buckets.reset();  // a run makes them anew, on this group
    return absl::OkStatus();
  });
}

std::string GpuExecutor::CollectiveBackend(const std::string& job_id) const {
  absl::MutexLock lock(&impl_->mu);
  const GpuSession* session = impl_->jobs.Get(job_id);
  if (session == nullptr || !session->group) return "";
  return session->group->getBackendName();
}

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
  response.mutable_cost()->set_device_kind("gpu");
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

absl::StatusOr<TrainRunResponse> GpuExecutor::TrainRun(const TrainRunRequest& request) {
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<GpuSession*> found = impl_->jobs.Find(request.job_id());
  if (!found.ok()) return found.status();
  GpuSession& session = **found;
  auto resident = impl_->samples.find(request.job_id());
  if (resident == impl_->samples.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", request.job_id(), " has no resident samples on this worker: load it with "
        "LoadParametersHeader.samples before a TrainRun"));
  }
  if (session.encoder_only) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", request.job_id(), " runs the encoder segment here; a run trains the whole model"));
  }
  if (request.first_step() == session.last_run_first_step &&
      request.steps_size() == session.last_run.losses_size() &&
      request.trial_job() == session.last_run_trial) {
    return session.last_run;  // a retry of the run answered last
  }
  RETURN_IF_ERROR(CheckRun(request, *resident->second));
  RETURN_IF_ERROR(CheckNotTaskApplied(session, request.job_id(), request));
  GpuSession* trial = nullptr;
  if (!request.trial_job().empty()) {
    absl::StatusOr<GpuSession*> t = impl_->jobs.Find(request.trial_job());
    if (!t.ok()) return t.status();
    trial = *t;
    RETURN_IF_ERROR(CheckNotTaskApplied(*trial, request.trial_job(), request));
  }
  RunDevice run_device{impl_->device, impl_->meter.get()};
  if (impl_->options.allreduce_bucket_bytes > 0) {
    run_device.bucket_bytes = impl_->options.allreduce_bucket_bytes;
    run_device.first_bucket_bytes =
        std::min(run_device.first_bucket_bytes, impl_->options.allreduce_bucket_bytes);
  }
  run_device.on_wait = [this](const std::string& what) { impl_->HostSync(what); };
  run_device.launch = request.launch() == Launch::graph ? Launch::graph : Launch::eager;
  run_device.uncaptured_graphs = impl_->options.uncaptured_graphs;
  run_device.cost = [this](const std::string& type, const GpuSession& s,
                           const std::vector<GpuKernel>& kernels,
                           const std::vector<int64_t>& stepped) {
    CostReport cost;
    impl_->Cost(type, s, kernels, {}, &cost, stepped);
    return cost;
  };
  return Guarded("TrainRun", [&]() -> absl::StatusOr<TrainRunResponse> {
    return AnswerRun(session, trial, *resident->second, request, run_device);
  });
}

absl::StatusOr<std::vector<TensorChunk>> GpuExecutor::Snapshot(
    const std::string& job_id, int64_t max_chunk_bytes,
    const std::vector<std::string>& names, bool optimizer_state) {
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<GpuSession*> found = impl_->jobs.Find(job_id);
  if (!found.ok()) return found.status();
  return Guarded("Snapshot", [&]() -> absl::StatusOr<std::vector<TensorChunk>> {
    return SnapshotGpuSession(**found, max_chunk_bytes, names, optimizer_state);
  });
}

absl::Status GpuExecutor::Release(const std::string& job_id) {
  absl::MutexLock lock(&impl_->mu);
  impl_->jobs.Erase(job_id);  // releasing an unknown job is a no-op
  impl_->samples.erase(job_id);
  return absl::OkStatus();
}

absl::StatusOr<ProbeBaselinesResponse> GpuExecutor::ProbeBaselines(
    const ProbeBaselinesRequest& request) {
  // Under the lock: no task shares the device while a probe times it.
  absl::MutexLock lock(&impl_->mu);
  return Guarded("ProbeBaselines", [&]() -> absl::StatusOr<ProbeBaselinesResponse> {
    return hpt::ProbeBaselines(request, impl_->device.str(), impl_->meter.get());
  });
}

std::vector<std::string> GpuExecutor::Jobs() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->jobs.Ids();
}

}  // namespace hpt
