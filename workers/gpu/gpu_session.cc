#include "workers/gpu/gpu_session.h"

#include <chrono>
#include <cstring>
#include <set>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/tensor_codec.h"
#include "models/lora.h"
#include "workers/gpu/nccl_group.h"

namespace hpt {
namespace {

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

// The tensors a load sends, by kind.
struct LoadTensors {
  std::map<std::string, HostTensor> base, adapters, optimizer_state, initial;
};

absl::StatusOr<LoadTensors> SortTensors(std::map<std::string, HostTensor> parameters,
                                        const torch::OrderedDict<std::string, torch::Tensor>& named) {
  LoadTensors out;
  for (auto& [name, tensor] : parameters) {
    if (absl::EndsWith(name, kInitialSuffix)) {
      out.initial[name.substr(0, name.size() - std::strlen(kInitialSuffix))] = std::move(tensor);
    } else if (name.find('@') != std::string::npos) {
      out.optimizer_state[name] = std::move(tensor);
    } else if (named.contains(name)) {
      out.base[name] = std::move(tensor);
    } else if (absl::StrContains(name, ".lora_")) {
      out.adapters[name] = std::move(tensor);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("LoadParameters sent tensor '", name, "', which the model lacks"));
    }
  }
  return out;
}

// Copies `from` into every tensor of `into`, which must all be there.
absl::Status CopyInto(torch::OrderedDict<std::string, torch::Tensor>& into,
                      std::map<std::string, HostTensor>& from) {
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
}

// LoRA on the session's model: adapters of the ranks restored ones have
// (A is [rank, in]), else from the header; restored adapters copied in.
absl::Status ApplyAdapters(const LoadParametersHeader& header,
                           std::map<std::string, HostTensor>& adapters, GpuSession& session,
                           LoadParametersResponse* response) {
  if (!adapters.empty() && !header.lora().enabled()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LoadParameters sent LoRA adapter '", adapters.begin()->first,
        "' but the header's lora is not enabled"));
  }
  if (!header.lora().enabled()) return absl::OkStatus();
  std::map<std::string, int> fixed_ranks;
  for (const auto& [name, t] : adapters) {
    const size_t at = name.find(".lora_");
    if (absl::EndsWith(name, ".A.weight") && !t.shape.empty()) {
      const std::string target = name.substr(at + 6, name.size() - at - 6 - 9);
      fixed_ranks[name.substr(0, at + 1) + target] = int(t.shape[0]);
    }
  }
  absl::StatusOr<std::map<std::string, int>> ranks =
      ApplyLora(session.model, header.lora(), session.initial, fixed_ranks);
  if (!ranks.ok()) return ranks.status();
  for (const auto& [name, rank] : *ranks) (*response->mutable_lora_ranks())[name] = rank;
  if (adapters.empty()) return absl::OkStatus();
  // Every tensor of each adapter sent is restored; adapters of targets
  // none was sent for (layers that switch now) start afresh.
  auto adapter_of = [](const std::string& name) {
    const size_t at = name.find(".lora_");
    return name.substr(0, name.find('.', at + 6));
  };
  std::set<std::string> sent;
  for (const auto& [name, t] : adapters) sent.insert(adapter_of(name));
  torch::OrderedDict<std::string, torch::Tensor> restored;
  for (const auto& item : session.model->named_parameters()) {
    if (absl::StrContains(item.key(), ".lora_") && sent.count(adapter_of(item.key())) > 0) {
      restored.insert(item.key(), item.value());
    }
  }
  if (restored.size() != adapters.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LoadParameters sent ", adapters.size(), " LoRA tensors; their adapters have ",
        restored.size()));
  }
  return CopyInto(restored, adapters);
}

void MakeOptimizer(const OptimizerConfig& opt, const std::vector<torch::Tensor>& trainable,
                   GpuSession& session) {
  const double beta1 = opt.beta1() > 0 ? opt.beta1() : 0.9;
  const double beta2 = opt.beta2() > 0 ? opt.beta2() : 0.999;
  const double eps = opt.eps() > 0 ? opt.eps() : 1e-8;
  session.optimizer_type = opt.type() == ADAMW ? ADAMW : ADAM;
  if (session.optimizer_type == ADAMW) {
    session.optimizer = std::make_unique<torch::optim::AdamW>(
        trainable, torch::optim::AdamWOptions(opt.learning_rate())
                       .betas({beta1, beta2})
                       .eps(eps)
                       .weight_decay(opt.weight_decay()));
  } else {
    session.optimizer = std::make_unique<torch::optim::Adam>(
        trainable, torch::optim::AdamOptions(opt.learning_rate())
                       .betas({beta1, beta2})
                       .eps(eps)
                       .weight_decay(opt.weight_decay()));
  }
}

// A checkpoint's Adam moments into the new optimizer, as after `steps`
// updates.
absl::Status RestoreOptimizerState(const std::map<std::string, HostTensor>& state,
                                   const LoadParametersHeader& header,
                                   const torch::Device& device, GpuSession& session) {
  if (state.empty()) return absl::OkStatus();
  if (header.optimizer_steps() <= 0) {
    return absl::InvalidArgumentError(
        "LoadParameters sent optimizer state but optimizer_steps is not positive");
  }
  size_t used = 0;
  for (const auto& item : session.model->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    auto m = state.find(item.key() + kExpAvgSuffix);
    auto v = state.find(item.key() + kExpAvgSqSuffix);
    if (m == state.end() || v == state.end()) continue;
    const int64_t steps = OptimizerStepsOf(header, item.key());
    if (steps <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LoadParameters sent optimizer state for '", item.key(),
          "' but its optimizer_steps_by_prefix entry is not positive"));
    }
    for (const HostTensor* t : {&m->second, &v->second}) {
      if (c10::IntArrayRef(t->shape) != item.value().sizes()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "optimizer state of '", item.key(), "' has shape ", t->ShapeString(),
            "; the parameter is ", ShapeString(item.value().sizes())));
      }
    }
    torch::Tensor exp_avg = ToTorch(m->second, device);
    torch::Tensor exp_avg_sq = ToTorch(v->second, device);
    if (session.optimizer_type == ADAMW) {
      SetState<torch::optim::AdamWParamState>(*session.optimizer, item.value(), steps, exp_avg,
                                              exp_avg_sq);
    } else {
      SetState<torch::optim::AdamParamState>(*session.optimizer, item.value(), steps, exp_avg,
                                             exp_avg_sq);
    }
    used += 2;
  }
  if (used != state.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LoadParameters sent ", state.size(),
        " optimizer tensors; the trainable parameters take ", used));
  }
  return absl::OkStatus();
}

}  // namespace

torch::Tensor ToTorch(const HostTensor& t, const torch::Device& device) {
  torch::Tensor cpu =
      torch::from_blob(const_cast<float*>(t.data.data()), t.shape, torch::kFloat32).clone();
  return cpu.to(device);
}

std::string ShapeString(c10::IntArrayRef sizes) { return "[" + absl::StrJoin(sizes, ", ") + "]"; }

absl::StatusOr<std::unique_ptr<GpuSession>> BuildGpuSession(
    const LoadParametersHeader& header, std::map<std::string, HostTensor> parameters,
    const GpuSession* reference, const torch::Device& device, LoadParametersResponse* response) {
  if (!Precision::Name_IsValid(header.precision())) {
    return absl::InvalidArgumentError(absl::StrCat("LoadParametersHeader.precision ",
                                                   int(header.precision()),
                                                   " is not fp32 or bf16: update the coordinator"));
  }
  auto session = std::make_unique<GpuSession>();
  session->config = header.model();
  session->bf16 = header.precision() == Precision::bf16;
  session->encoder_only = header.gpu_segment() == "encoder";
  // Seeds initialisation here and dropout in later forwards.
  torch::manual_seed(header.init_seed());
  session->model = SpatioTemporalTransformer(header.model());
  session->seed = header.init_seed();
  auto named = session->model->named_parameters();
  // The base model's parameters (all or none), LoRA adapters and optimizer
  // state (restoring a checkpoint).
  ASSIGN_OR_RETURN(LoadTensors tensors, SortTensors(std::move(parameters), named));
  if (!tensors.base.empty()) {
    if (tensors.base.size() != named.size()) {
      return absl::InvalidArgumentError(absl::StrCat("LoadParameters sent ", tensors.base.size(),
                                                     " tensors; the model has ", named.size(),
                                                     " (send all or none)"));
    }
    RETURN_IF_ERROR(CopyInto(named, tensors.base));
  }
  // Initial projection weights: kept from an earlier load of this job (or
  // of the reference job), else these.
  if (reference != nullptr) session->initial = reference->initial;
  if (session->initial.empty()) {
    for (const auto& [name, t] : tensors.initial) session->initial[name] = ToTorch(t, torch::kCPU);
  }
  if (session->initial.empty()) {
    for (const auto& item : session->model->named_parameters()) {
      if (item.key().find("_proj.weight") != std::string::npos) {
        session->initial[item.key()] = item.value().detach().clone().cpu();
      }
    }
  }
  RETURN_IF_ERROR(ApplyAdapters(header, tensors.adapters, *session, response));
  session->model->to(device);
  std::vector<torch::Tensor> trainable;
  for (const auto& item : session->model->named_parameters()) {
    response->set_num_parameters(response->num_parameters() + item.value().numel());
    if (item.value().requires_grad()) {
      trainable.push_back(item.value());
      response->set_num_trainable(response->num_trainable() + item.value().numel());
    }
  }
  response->set_num_tensors(static_cast<int64_t>(named.size()));
  session->state_bytes = TrainingStateBytes(session->model);
  MakeOptimizer(header.optimizer(), trainable, *session);
  RETURN_IF_ERROR(RestoreOptimizerState(tensors.optimizer_state, header, device, *session));
  return session;
}

std::string ForwardShapeKey(const std::vector<int64_t>& input_shape, bool train, bool targets,
                            bool outputs) {
  return absl::StrCat("forward ", absl::StrJoin(input_shape, "x"), train ? " train" : "",
                      targets ? " targets" : "", outputs ? " outputs" : "");
}

std::string BackwardShapeKey(int64_t batch, bool encoder, bool allreduce) {
  return absl::StrCat("backward ", batch, encoder ? " encoder" : " loss",
                      allreduce ? " allreduce" : "");
}

std::string UpdateShapeKey(const std::vector<int64_t>& stepped) {
  return absl::StrCat("update ", absl::StrJoin(stepped, ","));
}

std::vector<int64_t> SteppedNumels(GpuSession& session) {
  std::vector<int64_t> stepped;
  for (const auto& group : session.optimizer->param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      if (p.grad().defined()) stepped.push_back(p.numel());
    }
  }
  return stepped;
}

void SetLearningRate(GpuSession& session, double rate) {
  for (auto& group : session.optimizer->param_groups()) {
    if (session.optimizer_type == ADAMW) {
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(rate);
    } else {
      static_cast<torch::optim::AdamOptions&>(group.options()).lr(rate);
    }
  }
}

void AllReduceGradients(GpuSession& session, const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (torch::Tensor p : params) {  // a handle: its gradient is the parameter's
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad().view(-1));
  }
  std::vector<torch::Tensor> flat{torch::cat(grads)};
  session.group->allreduce(flat)->wait();
  int64_t offset = 0;
  for (torch::Tensor p : params) {
    const int64_t n = p.numel();
    p.mutable_grad().copy_(flat[0].narrow(0, offset, n).view_as(p));
    offset += n;
  }
}

void JoinGpuGroup(GpuSession& session, const JoinGroupRequest& request,
                  const torch::Device& device, const std::string& gloo_host) {
  const auto timeout = std::chrono::milliseconds(
      static_cast<int64_t>(1000 * (request.timeout_s() > 0 ? request.timeout_s() : 60)));
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(request.store_port());
  store_options.isServer = false;
  store_options.timeout = timeout;
  auto store = c10::make_intrusive<c10d::TCPStore>(request.store_host(), store_options);
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(request.store_prefix(), store);
  const std::chrono::milliseconds collective_timeout(static_cast<int64_t>(
      1000 * (request.collective_timeout_s() > 0 ? request.collective_timeout_s() : 15)));
  // NCCL on CUDA unless the coordinator asks for Gloo (ranks sharing one
  // GPU: NCCL refuses them); Gloo's collectives take CUDA tensors too.
  if (device.is_cuda() && request.backend() != "gloo") {
    session.group = MakeNcclGroup(prefixed, request.rank(), request.world_size(),
                                  device.has_index() ? device.index() : 0, collective_timeout);
  } else {
    auto options = c10d::ProcessGroupGloo::Options::create(collective_timeout);
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(gloo_host));
    session.group = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, request.rank(),
                                                                request.world_size(), options);
  }
  // Start from rank 0's parameters so every replica is identical.
  std::vector<torch::Tensor> params;
  for (const auto& p : session.model->parameters()) params.push_back(p.detach());
  for (auto& p : params) {
    std::vector<torch::Tensor> one{p};
    session.group->broadcast(one)->wait();
  }
}

std::vector<TensorChunk> SnapshotGpuSession(GpuSession& session, int64_t max_chunk_bytes,
                                            const std::vector<std::string>& names,
                                            bool optimizer_state) {
  auto append = [&](std::vector<TensorChunk>* chunks, const std::string& name,
                    const torch::Tensor& t) {
    torch::Tensor cpu = t.detach().to(torch::kCPU).contiguous();
    const std::vector<int64_t> shape(cpu.sizes().begin(), cpu.sizes().end());
    for (auto& c : SplitIntoChunks(name, shape, cpu.data_ptr<float>(), max_chunk_bytes)) {
      chunks->push_back(std::move(c));
    }
  };
  std::vector<TensorChunk> chunks;
  for (const auto& item : session.model->named_parameters()) {
    if (!names.empty() && std::find(names.begin(), names.end(), item.key()) == names.end()) {
      continue;
    }
    append(&chunks, item.key(), item.value());
    if (!optimizer_state) continue;
    if (auto it = session.initial.find(item.key()); it != session.initial.end()) {
      append(&chunks, item.key() + kInitialSuffix, it->second);
    }
    torch::Tensor exp_avg, exp_avg_sq;
    if (session.optimizer_type == ADAMW) {
      if (auto* st = FindState<torch::optim::AdamWParamState>(*session.optimizer, item.value())) {
        exp_avg = st->exp_avg(), exp_avg_sq = st->exp_avg_sq();
      }
    } else if (auto* st =
                   FindState<torch::optim::AdamParamState>(*session.optimizer, item.value())) {
      exp_avg = st->exp_avg(), exp_avg_sq = st->exp_avg_sq();
    }
    if (!exp_avg.defined()) continue;  // frozen, or not updated yet
    append(&chunks, item.key() + kExpAvgSuffix, exp_avg);
    append(&chunks, item.key() + kExpAvgSqSuffix, exp_avg_sq);
  }
  return chunks;
}

}  // namespace hpt
