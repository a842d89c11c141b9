#include "workers/gpu_executor.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "devices/gpu/kernel_cost.h"
#include "workers/kernel_recorder.h"
#include "workers/nccl_group.h"
#include "devices/gpu/roofline.h"
#include "models/model_config.h"
#include "models/model_flops.h"
#include "models/lora.h"
#include "models/st_transformer.h"

namespace hpt {
namespace {

using Clock = std::chrono::steady_clock;
using PendingKey = std::tuple<int64_t, int32_t, std::string>;

PendingKey KeyOf(const TaskKey& key) {
  return {key.step(), key.micro_batch(), key.segment()};
}

std::string KeyString(const TaskKey& key) {
  return absl::StrCat("job '", key.job_id(), "' step ", key.step(),
                      " micro-batch ", key.micro_batch(), " segment '",
                      key.segment(), "'");
}

std::string ShapeString(c10::IntArrayRef sizes) {
  return "[" + absl::StrJoin(sizes, ", ") + "]";
}

torch::Tensor ToTorch(const HostTensor& t, const torch::Device& device) {
  torch::Tensor cpu = torch::from_blob(const_cast<float*>(t.data.data()),
                                       t.shape, torch::kFloat32)
                          .clone();
  return cpu.to(device);
}

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

struct Pending {
  torch::Tensor loss;    // full model: backward starts here
  torch::Tensor output;  // encoder segment: backward takes its gradient
  int64_t batch = 0;
};

struct JobSession {
  ModelConfig config;
  SpatioTemporalTransformer model{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  OptimizerType optimizer_type = ADAM;
  std::map<PendingKey, Pending> pending;
  std::map<PendingKey, BackwardResponse> backward_done;
  int64_t last_applied_step = -1;
  bool encoder_only = false;
  int64_t last_batch = 0, last_tokens = 0;  // of the last train forward
  // Attention projection weights at the job's first load: the reference of
  // an auto LoRA rank ("the change since training began").
  std::map<std::string, torch::Tensor> initial;
  // The data-parallel group: NCCL when the model is on CUDA, Gloo on CPU.
  c10::intrusive_ptr<c10d::Backend> group;
  uint64_t seed = 0;  // init_seed: with the step, seeds each step's dropout
};

// The suffixes of a parameter's optimizer state in snapshots and loads.
constexpr const char* kExpAvg = "@exp_avg";
constexpr const char* kExpAvgSq = "@exp_avg_sq";

// LibTorch 2 keys an optimizer's per-parameter state by the tensor's impl
// pointer (1.13 keyed it by that pointer's decimal text).
void* StateKey(const torch::Tensor& p) { return p.unsafeGetTensorImpl(); }

// Adam's and AdamW's state of `p`, or null before its first update.
template <typename State>
State* FindState(torch::optim::Optimizer& optimizer, const torch::Tensor& p) {
  auto it = optimizer.state().find(StateKey(p));
  return it == optimizer.state().end() ? nullptr : static_cast<State*>(it->second.get());
}

template <typename State>
void SetState(torch::optim::Optimizer& optimizer, const torch::Tensor& p, int64_t steps,
              torch::Tensor exp_avg, torch::Tensor exp_avg_sq) {
  auto state = std::make_unique<State>();
  state->step(steps);
  state->exp_avg(std::move(exp_avg));
  state->exp_avg_sq(std::move(exp_avg_sq));
  optimizer.state()[StateKey(p)] = std::move(state);
}


}  // namespace

struct GpuExecutor::Impl {
  Options options;
  GpuSpec reference;
  torch::Device device{torch::kCPU};
  std::string device_name;  // device.str(), noting an auto choice without CUDA

  // Measured time, and the cost of the kernels the task ran on the
  // reference GPU (devices/gpu/kernel_cost.h).
  void Cost(const std::vector<GpuKernel>& kernels, Clock::time_point start,
            CostReport* cost) {
    cost->set_device_kind("gpu");
    cost->set_device(device_name);
    cost->set_measured_s(std::chrono::duration<double>(Clock::now() - start).count());
    const GpuStepCost simulated = CostKernels(reference, GpuPrecision::kFp32, kernels);
    cost->set_simulated_s(simulated.time_s);
    cost->set_energy_j(simulated.energy_j);
    auto& c = *cost->mutable_counters();
    c["flops"] = simulated.flops;
    c["dram_bytes"] = simulated.bytes;
    c["kernels"] = double(simulated.kernels);
    c["launch_bound_kernels"] = double(simulated.launch_bound_kernels);
    c["launch_bound_s"] = simulated.launch_bound_s;
  }
  mutable absl::Mutex mu;
  std::map<std::string, std::unique_ptr<JobSession>> jobs ABSL_GUARDED_BY(mu);

  absl::StatusOr<JobSession*> Find(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = jobs.find(job_id);
    if (it == jobs.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job '", job_id, "' has no parameters on this worker; call "
          "LoadParameters first"));
    }
    return it->second.get();
  }

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
  absl::StatusOr<GpuSpec> reference = GpuPreset(options.reference_gpu);
  if (!reference.ok()) return reference.status();
  impl->reference = *reference;
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
  if (options.intra_op_threads > 0) {
    torch::set_num_threads(options.intra_op_threads);
  }
  return std::unique_ptr<GpuExecutor>(new GpuExecutor(std::move(impl)));
}

std::string GpuExecutor::device_name() const { return impl_->device_name; }

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
    auto session = std::make_unique<JobSession>();
    session->config = header.model();
    session->encoder_only = header.gpu_segment() == "encoder";
    // Seeds initialisation here and dropout in later forwards.
    torch::manual_seed(header.init_seed());
    session->model = SpatioTemporalTransformer(header.model());
    session->seed = header.init_seed();
    LoadParametersResponse response;
    auto named = session->model->named_parameters();
    // The chunks: the base model's parameters (all or none), LoRA adapters
    // and optimizer state (restoring a checkpoint).
    std::map<std::string, HostTensor> base, adapters, optimizer_state;
    for (auto& [name, tensor] : parameters) {
      if (name.find('@') != std::string::npos) {
        optimizer_state[name] = std::move(tensor);
      } else if (named.contains(name)) {
        base[name] = std::move(tensor);
      } else if (absl::StrContains(name, ".lora_")) {
        adapters[name] = std::move(tensor);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("LoadParameters sent tensor '", name, "', which the model lacks"));
      }
    }
    auto copy_into = [](torch::OrderedDict<std::string, torch::Tensor>& into,
                        std::map<std::string, HostTensor>& from) -> absl::Status {
      torch::NoGradGuard no_grad;
      for (auto& item : into) {
        auto it = from.find(item.key());
        if (it == from.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("LoadParameters lacks tensor '", item.key(), "'"));
        }
        if (c10::IntArrayRef(it->second.shape) != item.value().sizes()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "tensor '", item.key(), "' has shape ", it->second.ShapeString(),
              "; the model needs ", ShapeString(item.value().sizes())));
        }
        item.value().copy_(ToTorch(it->second, torch::kCPU));
      }
      return absl::OkStatus();
    };
    if (!base.empty()) {
      if (base.size() != named.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "LoadParameters sent ", base.size(), " tensors; the model has ",
            named.size(), " (send all or none)"));
      }
      RETURN_IF_ERROR(copy_into(named, base));
    }
    // Initial projection weights: kept from an earlier load of this job (or
    // of the reference job), else these.
    const std::string reference =
        header.lora().reference_job().empty() ? header.job_id() : header.lora().reference_job();
    if (auto it = impl_->jobs.find(reference); it != impl_->jobs.end()) {
      session->initial = it->second->initial;
    }
    if (session->initial.empty()) {
      for (const auto& item : session->model->named_parameters()) {
        if (item.key().find("_proj.weight") != std::string::npos) {
          session->initial[item.key()] = item.value().detach().clone().cpu();
        }
      }
    }
    if (!adapters.empty() && !header.lora().enabled()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LoadParameters sent LoRA adapter '", adapters.begin()->first,
          "' but the header's lora is not enabled"));
    }
    if (header.lora().enabled()) {
      // Restored adapters keep their ranks: A is [rank, in].
      std::map<std::string, int> fixed_ranks;
      for (const auto& [name, t] : adapters) {
        const size_t at = name.find(".lora_");
        if (absl::EndsWith(name, ".A.weight") && !t.shape.empty()) {
          const std::string target = name.substr(at + 6, name.size() - at - 6 - 9);
          fixed_ranks[name.substr(0, at + 1) + target] = int(t.shape[0]);
        }
      }
      absl::StatusOr<std::map<std::string, int>> ranks =
          ApplyLora(session->model, header.lora(), session->initial, fixed_ranks);
      if (!ranks.ok()) return ranks.status();
      for (const auto& [name, rank] : *ranks) (*response.mutable_lora_ranks())[name] = rank;
      if (!adapters.empty()) {
        torch::OrderedDict<std::string, torch::Tensor> added;
        for (const auto& item : session->model->named_parameters()) {
          if (absl::StrContains(item.key(), ".lora_")) added.insert(item.key(), item.value());
        }
        if (added.size() != adapters.size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "LoadParameters sent ", adapters.size(), " LoRA tensors; the adapters have ",
              added.size()));
        }
        RETURN_IF_ERROR(copy_into(added, adapters));
      }
    }
    session->model->to(impl_->device);
    std::vector<torch::Tensor> trainable;
    for (const auto& item : session->model->named_parameters()) {
      response.set_num_parameters(response.num_parameters() + item.value().numel());
      if (item.value().requires_grad()) {
        trainable.push_back(item.value());
        response.set_num_trainable(response.num_trainable() + item.value().numel());
      }
    }
    response.set_num_tensors(static_cast<int64_t>(named.size()));
    const double beta1 = opt.beta1() > 0 ? opt.beta1() : 0.9;
    const double beta2 = opt.beta2() > 0 ? opt.beta2() : 0.999;
    const double eps = opt.eps() > 0 ? opt.eps() : 1e-8;
    session->optimizer_type = opt.type() == ADAMW ? ADAMW : ADAM;
    if (session->optimizer_type == ADAMW) {
      session->optimizer = std::make_unique<torch::optim::AdamW>(
          trainable,
          torch::optim::AdamWOptions(opt.learning_rate())
              .betas({beta1, beta2})
              .eps(eps)
              .weight_decay(opt.weight_decay()));
    } else {
      session->optimizer = std::make_unique<torch::optim::Adam>(
          trainable,
          torch::optim::AdamOptions(opt.learning_rate())
              .betas({beta1, beta2})
              .eps(eps)
              .weight_decay(opt.weight_decay()));
    }
    if (!optimizer_state.empty()) {
      if (header.optimizer_steps() <= 0) {
        return absl::InvalidArgumentError(
            "LoadParameters sent optimizer state but optimizer_steps is not positive");
      }
      size_t used = 0;
      for (const auto& item : session->model->named_parameters()) {
        if (!item.value().requires_grad()) continue;
        auto m = optimizer_state.find(item.key() + kExpAvg);
        auto v = optimizer_state.find(item.key() + kExpAvgSq);
        if (m == optimizer_state.end() || v == optimizer_state.end()) continue;
        for (auto* t : {&m->second, &v->second}) {
          if (c10::IntArrayRef(t->shape) != item.value().sizes()) {
            return absl::InvalidArgumentError(absl::StrCat(
                "optimizer state of '", item.key(), "' has shape ", t->ShapeString(),
                "; the parameter is ", ShapeString(item.value().sizes())));
          }
        }
        torch::Tensor exp_avg = ToTorch(m->second, impl_->device);
        torch::Tensor exp_avg_sq = ToTorch(v->second, impl_->device);
        if (session->optimizer_type == ADAMW) {
          SetState<torch::optim::AdamWParamState>(*session->optimizer, item.value(),
                                                  header.optimizer_steps(), exp_avg,
                                                  exp_avg_sq);
        } else {
          SetState<torch::optim::AdamParamState>(*session->optimizer, item.value(),
                                                 header.optimizer_steps(), exp_avg,
                                                 exp_avg_sq);
        }
        used += 2;
      }
      if (used != optimizer_state.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "LoadParameters sent ", optimizer_state.size(),
            " optimizer tensors; the trainable parameters take ", used));
      }
    }
    impl_->jobs[header.job_id()] = std::move(session);
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
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<JobSession*> session = impl_->Find(request.job_id());
  if (!session.ok()) return session.status();
  return Guarded("JoinGroup", [&]() -> absl::Status {
    const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(
        1000 * (request.timeout_s() > 0 ? request.timeout_s() : 60)));
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(request.store_port());
    store_options.isServer = false;
    store_options.timeout = timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(request.store_host(),
                                                     store_options);
    auto prefixed =
        c10::make_intrusive<c10d::PrefixStore>(request.store_prefix(), store);
    const std::chrono::milliseconds collective_timeout(static_cast<int64_t>(
        1000 * (request.collective_timeout_s() > 0 ? request.collective_timeout_s() : 15)));
    if (impl_->device.is_cuda()) {
      (*session)->group = MakeNcclGroup(prefixed, request.rank(), request.world_size(),
                                        impl_->device.has_index() ? impl_->device.index() : 0,
                                        collective_timeout);
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(collective_timeout);
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(
          impl_->options.gloo_host));
      (*session)->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
          prefixed, request.rank(), request.world_size(), options);
    }
    // Start from rank 0's parameters so every replica is identical.
    std::vector<torch::Tensor> params;
    for (const auto& p : (*session)->model->parameters()) {
      params.push_back(p.detach());
    }
    for (auto& p : params) {
      std::vector<torch::Tensor> one{p};
      (*session)->group->broadcast(one)->wait();
    }
    return absl::OkStatus();
  });
}

std::string GpuExecutor::CollectiveBackend(const std::string& job_id) const {
  absl::MutexLock lock(&impl_->mu);
  auto it = impl_->jobs.find(job_id);
  if (it == impl_->jobs.end() || !it->second->group) return "";
  return it->second->group->getBackendName();
}

absl::StatusOr<ForwardResponse> GpuExecutor::Forward(
    const ForwardRequest& request) {
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<JobSession*> found = impl_->Find(request.key().job_id());
  if (!found.ok()) return found.status();
  JobSession& session = **found;
  return Guarded("Forward", [&]() -> absl::StatusOr<ForwardResponse> {
    const auto start = Clock::now();
    KernelRecorder recorder;
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
    if (session.encoder_only) {
      // The loss is computed downstream: hand the encoder output on.
      if (request.train()) {
        session.model->train();
        outputs = session.model->Encode(*inputs);
        session.pending[KeyOf(request.key())] = Pending{{}, outputs, batch};
      } else {
        torch::NoGradGuard no_grad;
        session.model->eval();
        outputs = session.model->Encode(*inputs);
      }
      torch::Tensor cpu = outputs.detach().to(torch::kCPU).contiguous();
      FloatsToProto(cpu.data_ptr<float>(),
                    std::vector<int64_t>(cpu.sizes().begin(), cpu.sizes().end()),
                    "outputs", response.mutable_outputs());
    } else if (request.train()) {
      session.model->train();
      outputs = session.model->forward(*inputs);
      torch::Tensor loss = MseLoss(outputs, targets);
      response.set_loss(loss.item<double>());
      session.pending[KeyOf(request.key())] = Pending{loss, {}, batch};
    } else {
      torch::NoGradGuard no_grad;
      session.model->eval();
      outputs = session.model->forward(*inputs);
      if (has_targets) response.set_loss(MseLoss(outputs, targets).item<double>());
    }
    if (request.return_outputs() && !session.encoder_only) {
      torch::Tensor cpu = outputs.detach().to(torch::kCPU).contiguous();
      FloatsToProto(cpu.data_ptr<float>(),
                    std::vector<int64_t>(cpu.sizes().begin(), cpu.sizes().end()),
                    "outputs", response.mutable_outputs());
    }
    impl_->Sync();
    if (request.train()) {
      session.last_batch = batch;
      session.last_tokens = inputs->size(1);
    }
    impl_->Cost(recorder.Finish(), start, response.mutable_cost());
    return response;
  });
}

absl::StatusOr<BackwardResponse> GpuExecutor::Backward(
    const BackwardRequest& request) {
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<JobSession*> found = impl_->Find(request.key().job_id());
  if (!found.ok()) return found.status();
  JobSession& session = **found;
  const PendingKey key = KeyOf(request.key());
  if (auto done = session.backward_done.find(key);
      done != session.backward_done.end()) {
    return done->second;  // a retry: the gradient is already accumulated
  }
  auto it = session.pending.find(key);
  if (it == session.pending.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no pending forward for ", KeyString(request.key()),
        "; a backward needs a train-mode forward with the same key"));
  }
  const int64_t global_batch = request.global_batch_size() > 0
                                   ? request.global_batch_size()
                                   : it->second.batch;
  if (global_batch < it->second.batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BackwardRequest.global_batch_size ", global_batch,
        " is smaller than this micro-batch (", it->second.batch, ")"));
  }
  return Guarded("Backward", [&]() -> absl::StatusOr<BackwardResponse> {
    const auto start = Clock::now();
    KernelRecorder recorder;
    if (it->second.output.defined()) {
      absl::StatusOr<HostTensor> grad =
          FromProto(request.grad_output(), "BackwardRequest.grad_output");
      if (!grad.ok()) return grad.status();
      if (c10::IntArrayRef(grad->shape) != it->second.output.sizes()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "BackwardRequest.grad_output has shape ", grad->ShapeString(),
            "; the encoder output is ", ShapeString(it->second.output.sizes())));
      }
      it->second.output.backward(ToTorch(*grad, impl_->device));
    } else {
      const double weight = double(it->second.batch) / double(global_batch);
      (it->second.loss * weight).backward();
    }
    session.pending.erase(it);
    std::vector<torch::Tensor> params;
    for (const auto& p : session.model->parameters()) {
      if (p.requires_grad()) params.push_back(p);
    }
    if (session.group) {
      // One flat buffer, one allreduce: far cheaper than one per tensor.
      std::vector<torch::Tensor> grads;
      for (auto& p : params) {
        if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
        grads.push_back(p.grad().view(-1));
      }
      std::vector<torch::Tensor> flat{torch::cat(grads)};
      session.group->allreduce(flat)->wait();
      int64_t offset = 0;
      for (auto& p : params) {
        const int64_t n = p.numel();
        p.mutable_grad().copy_(flat[0].narrow(0, offset, n).view_as(p));
        offset += n;
      }
    }
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
    impl_->Cost(recorder.Finish(), start, response.mutable_cost());
    session.backward_done[key] = response;
    return response;
  });
}

absl::StatusOr<ApplyUpdateResponse> GpuExecutor::ApplyUpdate(
    const ApplyUpdateRequest& request) {
  if (!(request.learning_rate() > 0) || !std::isfinite(request.learning_rate())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ApplyUpdateRequest.learning_rate must be positive, got ",
        request.learning_rate()));
  }
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<JobSession*> found = impl_->Find(request.job_id());
  if (!found.ok()) return found.status();
  JobSession& session = **found;
  ApplyUpdateResponse response;
  response.mutable_cost()->set_device_kind("gpu");
  response.mutable_cost()->set_device(impl_->device_name);
  if (request.step() <= session.last_applied_step) {
    response.set_applied(false);  // a retry of an update already applied
    return response;
  }
  return Guarded("ApplyUpdate", [&]() -> absl::StatusOr<ApplyUpdateResponse> {
    const auto start = Clock::now();
    KernelRecorder recorder;
    for (auto& group : session.optimizer->param_groups()) {
      if (session.optimizer_type == ADAMW) {
        static_cast<torch::optim::AdamWOptions&>(group.options())
            .lr(request.learning_rate());
      } else {
        static_cast<torch::optim::AdamOptions&>(group.options())
            .lr(request.learning_rate());
      }
    }
    session.optimizer->step();
    session.optimizer->zero_grad();
    session.last_applied_step = request.step();
    session.backward_done.clear();
    // Forwards of finished steps will never see their backward.
    for (auto it = session.pending.begin(); it != session.pending.end();) {
      it = std::get<0>(it->first) <= request.step() ? session.pending.erase(it)
                                                    : std::next(it);
    }
    impl_->Sync();
    response.set_applied(true);
    impl_->Cost(recorder.Finish(), start, response.mutable_cost());
    return response;
  });
}

absl::StatusOr<std::vector<TensorChunk>> GpuExecutor::Snapshot(
    const std::string& job_id, int64_t max_chunk_bytes,
    const std::vector<std::string>& names, bool optimizer_state) {
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<JobSession*> found = impl_->Find(job_id);
  if (!found.ok()) return found.status();
  return Guarded("Snapshot", [&]() -> absl::StatusOr<std::vector<TensorChunk>> {
    std::vector<TensorChunk> chunks;
    for (const auto& item : (*found)->model->named_parameters()) {
      if (!names.empty() &&
          std::find(names.begin(), names.end(), item.key()) == names.end()) {
        continue;
      }
      torch::Tensor cpu = item.value().detach().to(torch::kCPU).contiguous();
      std::vector<TensorChunk> part = SplitIntoChunks(
          item.key(),
          std::vector<int64_t>(cpu.sizes().begin(), cpu.sizes().end()),
          cpu.data_ptr<float>(), max_chunk_bytes);
      for (auto& c : part) chunks.push_back(std::move(c));
      if (!optimizer_state) continue;
      JobSession& session = **found;
      torch::Tensor exp_avg, exp_avg_sq;
      if (session.optimizer_type == ADAMW) {
        if (auto* st = FindState<torch::optim::AdamWParamState>(*session.optimizer,
                                                                item.value())) {
          exp_avg = st->exp_avg(), exp_avg_sq = st->exp_avg_sq();
        }
      } else if (auto* st = FindState<torch::optim::AdamParamState>(*session.optimizer,
                                                                    item.value())) {
        exp_avg = st->exp_avg(), exp_avg_sq = st->exp_avg_sq();
      }
      if (!exp_avg.defined()) continue;  // frozen, or not updated yet
      for (const auto& [suffix, t] : {std::pair{kExpAvg, exp_avg}, {kExpAvgSq, exp_avg_sq}}) {
        torch::Tensor state = t.detach().to(torch::kCPU).contiguous();
        const std::vector<int64_t> shape(state.sizes().begin(), state.sizes().end());
        for (auto& c : SplitIntoChunks(item.key() + suffix, shape, state.data_ptr<float>(),
                                       max_chunk_bytes)) {
          chunks.push_back(std::move(c));
        }
      }
    }
    return chunks;
  });
}

absl::Status GpuExecutor::Release(const std::string& job_id) {
  absl::MutexLock lock(&impl_->mu);
  impl_->jobs.erase(job_id);  // releasing an unknown job is a no-op
  return absl::OkStatus();
}

std::vector<std::string> GpuExecutor::Jobs() const {
  absl::MutexLock lock(&impl_->mu);
  std::vector<std::string> ids;
  for (const auto& [id, session] : impl_->jobs) ids.push_back(id);
  return ids;
}

}  // namespace hpt
