#include "workers/gpu/gpu_executor.h"

#include <torch/torch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/launch_mode.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "devices/cost_settings.h"
#include "devices/gpu/kernel_cost.h"
#include "devices/gpu/roofline.h"
#include "devices/work_cost.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "workers/gpu/baseline_probe.h"
#include "workers/gpu/device_meter.h"
#include "workers/gpu/gpu_executor_impl.h"
#include "workers/gpu/gpu_run.h"
#include "workers/gpu/gpu_session.h"
#include "workers/gpu/kernel_recorder.h"
#include "workers/gpu/nccl_group.h"
#include "workers/task_book.h"

namespace hpt {

GpuExecutor::GpuExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuExecutor::~GpuExecutor() = default;

absl::StatusOr<std::unique_ptr<GpuExecutor>> GpuExecutor::Create(
    const Options& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  absl::StatusOr<GpuSpec> reference = GpuProfileOrPreset(options.reference_gpu);
  if (!reference.ok()) return reference.status();
  impl->cost_config = DefaultDeviceCostConfig(DeviceKind::gpu);
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
  // The board's own UUID: its energy counter is opened by it, never by a
  // --device_id a person gave, nor by an index that CUDA_VISIBLE_DEVICES
  // may have renumbered.
  std::string uuid;
  if (impl->device.is_cuda()) {
    try {
      uuid = CudaDeviceUuid(impl->device.has_index() ? impl->device.index() : 0);
    } catch (const c10::Error& e) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device '", impl->device.str(), "': cannot read its UUID: ", e.what_without_backtrace()));
    }
  }
  impl->device_id = options.device_id.empty() ? uuid : options.device_id;
  if (options.intra_op_threads > 0) {
    torch::set_num_threads(options.intra_op_threads);
  }
  impl->meter = DeviceMeter::Create(impl->device.str(), uuid);
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
  run_device.launch = LaunchOrEager(request.launch());
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
