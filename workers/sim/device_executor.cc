#include "workers/sim/device_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/cost_util.h"
#include "common/device_kind.h"
#include "common/tensor_codec.h"
#include "workers/sim/segment_graph.h"
#include "workers/task_book.h"

namespace hpt {
namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  std::string segment;
  SegmentGraph::Saved saved;
  HostTensor loss_grad;  // set when the forward computed the loss
};

struct LoadedJob {
  std::map<std::string, std::unique_ptr<SegmentGraph>> segments;
  OptimizerConfig optimizer;
  TaskBook<Pending> tasks;
  int64_t adam_steps = 0;
};

void AdamUpdate(const OptimizerConfig& opt, int64_t t, double lr,
                std::vector<float>& p, std::vector<float>& g,
                std::vector<float>& m, std::vector<float>& v) {
  const double beta1 = opt.beta1() > 0 ? opt.beta1() : 0.9;
  const double beta2 = opt.beta2() > 0 ? opt.beta2() : 0.999;
  const double eps = opt.eps() > 0 ? opt.eps() : 1e-8;
  const double wd = opt.weight_decay();
  const bool decoupled = opt.type() == ADAMW;
  const double c1 = 1 - std::pow(beta1, double(t)), c2 = 1 - std::pow(beta2, double(t));
  if (m.size() != p.size()) m.assign(p.size(), 0.0f), v.assign(p.size(), 0.0f);
  for (size_t i = 0; i < p.size(); ++i) {
    double grad = g[i];
    if (decoupled) {
      p[i] = static_cast<float>(p[i] * (1 - lr * wd));
    } else if (wd > 0) {
      grad += wd * p[i];
    }
    m[i] = static_cast<float>(beta1 * m[i] + (1 - beta1) * grad);
    v[i] = static_cast<float>(beta2 * v[i] + (1 - beta2) * grad * grad);
    const double m_hat = m[i] / c1, v_hat = v[i] / c2;
    p[i] = static_cast<float>(p[i] - lr * m_hat / (std::sqrt(v_hat) + eps));
  }
  std::fill(g.begin(), g.end(), 0.0f);
}

// A ReRAM layer's read state (reram_layer.h) as a tensor: five 64-bit
// values, each as four 16-bit pieces (exact in fp32).
constexpr const char* kReramRead = kReramReadSuffix;

std::vector<float> EncodeReadState(const ReramLayer::ReadState& s) {
  uint64_t words[5];
  std::memcpy(&words[0], &s.adc_error_var[0], 8);
  std::memcpy(&words[1], &s.adc_error_var[1], 8);
  words[2] = uint64_t(s.reads_since_calibration[0]);
  words[3] = uint64_t(s.reads_since_calibration[1]);
  words[4] = s.draws;
  std::vector<float> out;
  for (uint64_t w : words) {
    for (int piece = 0; piece < 4; ++piece) out.push_back(float((w >> (16 * piece)) & 0xFFFF));
  }
  return out;
}

absl::StatusOr<ReramLayer::ReadState> DecodeReadState(const std::string& name,
                                                      const FloatBuffer& in) {
  if (in.size() != 20) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' has ", in.size(), " values; a ReRAM read state has 20"));
  }
  uint64_t words[5] = {0, 0, 0, 0, 0};
  for (int i = 0; i < 20; ++i) {
    const float piece = in[i];
    if (!(piece >= 0 && piece <= 65535) || piece != std::floor(piece)) {
      return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a ReRAM read state"));
    }
    words[i / 4] |= uint64_t(piece) << (16 * (i % 4));
  }
  ReramLayer::ReadState s;
  std::memcpy(&s.adc_error_var[0], &words[0], 8);
  std::memcpy(&s.adc_error_var[1], &words[1], 8);
  s.reads_since_calibration[0] = int64_t(words[2]);
  s.reads_since_calibration[1] = int64_t(words[3]);
  s.draws = words[4];
  return s;
}

uint64_t MaskSeed(uint64_t seed, const TaskKey& key) {
  return seed * 1000003ULL + uint64_t(key.step()) * 8191ULL + uint64_t(key.micro_batch());
}

// The named tensors of a request, their bytes taken from it.
absl::StatusOr<std::map<std::string, HostTensor>> NamedTensors(
    google::protobuf::RepeatedPtrField<Tensor>* tensors, const std::string& field) {
  std::map<std::string, HostTensor> out;
  for (Tensor& t : *tensors) {
    absl::StatusOr<HostTensor> value =
        FromProto(std::move(t), absl::StrCat(field, " '", t.name(), "'"));
    if (!value.ok()) return value.status();
    out[t.name()] = std::move(*value);
  }
  return out;
}

// How many fewer updates parameter `name`'s Adam state has than the
// job's: optimizer_steps less its own (OptimizerStepsOf).
absl::StatusOr<int64_t> AdamLag(const LoadParametersHeader& header, const std::string& name) {
  const int64_t steps = OptimizerStepsOf(header, name);
  if (steps < 0 || steps > header.optimizer_steps()) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer_steps_by_prefix gives '", name, "' ", steps,
                     " updates; it must lie between 0 and the job's optimizer_steps, ",
                     header.optimizer_steps()));
  }
  return header.optimizer_steps() - steps;
}

}  // namespace

struct DeviceExecutor::Impl {
  explicit Impl(DeviceKind::Name kind)
      : jobs(absl::StrCat("has no segment on this ", KindName(kind), " worker")) {}

  DeviceNode node;
  mutable absl::Mutex mu;
  JobTable<LoadedJob> jobs ABSL_GUARDED_BY(mu);

  absl::StatusOr<SegmentGraph*> FindSegment(LoadedJob& job, const TaskKey& key) {
    auto it = job.segments.find(key.segment());
    if (it == job.segments.end()) {
      std::vector<std::string> names;
      for (const auto& [name, graph] : job.segments) names.push_back(name);
      return absl::NotFoundError(
          absl::StrCat("job '", key.job_id(), "' has no segment '", key.segment(), "' on this ",
                       KindName(node.kind), " worker (it has: ", absl::StrJoin(names, ", "), ")"));
    }
    return it->second.get();
  }
};

DeviceExecutor::DeviceExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceExecutor::~DeviceExecutor() = default;

absl::StatusOr<std::unique_ptr<DeviceExecutor>> DeviceExecutor::Create(
    const Options& options) {
  if (options.kind != DeviceKind::reram && options.kind != DeviceKind::systolic) {
    return absl::InvalidArgumentError(absl::StrCat("DeviceExecutor kind '", KindName(options.kind),
                                                   "' is not reram or systolic"));
  }
  if (absl::Status s = ValidateSystolicConfig(options.systolic); !s.ok()) return s;
  if (absl::Status s = ValidateReramConfig(options.reram); !s.ok()) return s;
  auto impl = std::make_unique<Impl>(options.kind);
  impl->node.kind = options.kind;
  impl->node.systolic = options.systolic;
  impl->node.reram = options.reram;
  impl->node.elementwise_energy_j = options.elementwise_energy_j;
  impl->node.SetCostSettings();
  return std::unique_ptr<DeviceExecutor>(new DeviceExecutor(std::move(impl)));
}

std::string DeviceExecutor::device_name() const {
  const DeviceNode& o = impl_->node;
  if (o.is_reram()) {
    return absl::StrCat("reram ", o.reram.crossbar_rows, "x", o.reram.crossbar_cols,
                        " crossbars, ", o.reram.cell_bits, "-bit cells, ",
                        o.reram.adc_bits, "-bit ADC");
  }
  return absl::StrCat("systolic ", o.systolic.rows, "x", o.systolic.cols, " ",
                      DataflowName(o.systolic.dataflow));
}

absl::StatusOr<LoadParametersResponse> DeviceExecutor::Load(
    const LoadParametersHeader& header,
    std::map<std::string, HostTensor> parameters) {
  const auto start = Clock::now();
  if (header.job_id().empty()) {
    return absl::InvalidArgumentError("LoadParametersHeader.job_id is empty");
  }
  CostBuilder cost(impl_->node);
  // Optimizer state (a checkpoint's) is set after the graph exists.
  std::map<std::string, HostTensor> optimizer_state;
  for (auto it = parameters.begin(); it != parameters.end();) {
    if (it->first.find('@') == std::string::npos) {
      ++it;
      continue;
    }
    optimizer_state[it->first] = std::move(it->second);
    it = parameters.erase(it);
  }
  const bool has_moments =
      std::any_of(optimizer_state.begin(), optimizer_state.end(),
                  [](const auto& e) { return absl::StrContains(e.first, kExpAvgSuffix); });
  if (has_moments && header.optimizer_steps() <= 0) {
    return absl::InvalidArgumentError(
        "LoadParameters sent optimizer state but optimizer_steps is not positive");
  }
  absl::StatusOr<std::unique_ptr<SegmentGraph>> graph =
      SegmentGraph::Create(impl_->node, header.segment(), parameters, &cost);
  if (!graph.ok()) return graph.status();
  size_t used = 0;
  for (auto& [name, p] : (*graph)->params()) {
    if (p.trainable) {
      absl::StatusOr<int64_t> lag = AdamLag(header, name);
      if (!lag.ok()) return lag.status();
      p.adam_lag = *lag;
    }
    if (auto read = optimizer_state.find(name + kReramRead);
        read != optimizer_state.end() && p.crossbars) {
      absl::StatusOr<ReramLayer::ReadState> state = DecodeReadState(read->first, read->second.data);
      if (!state.ok()) return state.status();
      p.crossbars->RestoreReadState(*state);
      ++used;
    }
    auto m = optimizer_state.find(name + kExpAvgSuffix);
    auto v = optimizer_state.find(name + kExpAvgSqSuffix);
    if (!p.trainable || m == optimizer_state.end() || v == optimizer_state.end()) continue;
    if (header.optimizer_steps() - p.adam_lag <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("LoadParameters sent optimizer state for '", name,
                       "' but its optimizer_steps_by_prefix entry is not positive"));
    }
    if (m->second.data.size() != p.value.size() || v->second.data.size() != p.value.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer state of '", name, "' has ", m->second.data.size(), " and ",
          v->second.data.size(), " values; the parameter has ", p.value.size()));
    }
    p.adam_m = m->second.data.ToVector();
    p.adam_v = v->second.data.ToVector();
    used += 2;
  }
  if (used != optimizer_state.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LoadParameters sent ", optimizer_state.size(),
        " optimizer tensors; this segment's trainable parameters take ", used));
  }
  LoadParametersResponse response;
  response.set_num_parameters((*graph)->num_parameters());
  int64_t trainable = 0;
  for (const auto& [name, p] : (*graph)->params()) {
    if (p.trainable) trainable += int64_t(p.value.size());
  }
  response.set_num_trainable(trainable);
  response.set_num_tensors(int64_t((*graph)->params().size()));
  *response.mutable_cost() = cost.Finish(start);
  // A job may hold several segments here; loading one replaces only it.
  absl::MutexLock lock(&impl_->mu);
  LoadedJob& job = impl_->jobs.Emplace(header.job_id());
  // A load starts (or restarts, from a checkpoint) the job's run here: what
  // an earlier run left (forwards awaiting a backward, backward answers,
  // the last step applied) must not answer the replayed steps. A
  // coordinator that died never released the job, and without this a
  // replayed update at or before the old run's last one was skipped.
  job.tasks = TaskBook<Pending>();
  job.optimizer = header.optimizer();
  // Adam's step count is the header's: 0 for a fresh optimizer, the
  // checkpoint's updates when restoring (never an earlier run's count).
  job.adam_steps = header.optimizer_steps();
  job.segments[header.segment().name()] = std::move(*graph);
  return response;
}

absl::Status DeviceExecutor::JoinGroup(const JoinGroupRequest&) {
  return absl::UnimplementedError(
      absl::StrCat(KindName(impl_->node.kind), " workers do not join data-parallel groups"));
}

absl::StatusOr<ForwardResponse> DeviceExecutor::Forward(const ForwardRequest& request) {
  return TakeForward(ForwardRequest(request));
}

absl::StatusOr<BackwardResponse> DeviceExecutor::Backward(const BackwardRequest& request) {
  return TakeBackward(BackwardRequest(request));
}

absl::StatusOr<ForwardResponse> DeviceExecutor::TakeForward(ForwardRequest&& request) {
  const auto start = Clock::now();
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<LoadedJob*> found = impl_->jobs.Find(request.key().job_id());
  if (!found.ok()) return found.status();
  LoadedJob& job = **found;
  absl::StatusOr<SegmentGraph*> segment = impl_->FindSegment(job, request.key());
  if (!segment.ok()) return segment.status();
  SegmentGraph& graph = **segment;
  std::map<std::string, HostTensor> inputs;
  if (graph.chain()) {
    absl::StatusOr<HostTensor> input =
        FromProto(std::move(*request.mutable_inputs()), "ForwardRequest.inputs");
    if (!input.ok()) return input.status();
    if (input->shape.empty() || input->num_elements() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ForwardRequest.inputs is empty (shape ", input->ShapeString(), ")"));
    }
    inputs[graph.inputs().front()] = std::move(*input);
  } else {
    absl::StatusOr<std::map<std::string, HostTensor>> named =
        NamedTensors(request.mutable_values(), "ForwardRequest.values");
    if (!named.ok()) return named.status();
    inputs = std::move(*named);
  }
  const int64_t samples = inputs.empty() || inputs.begin()->second.shape.empty()
                              ? 0
                              : inputs.begin()->second.shape[0];
  CostBuilder cost(impl_->node);
  Pending pending;
  pending.segment = graph.name();
  absl::StatusOr<std::map<std::string, HostTensor>> outputs =
      graph.Forward(std::move(inputs), MaskSeed(graph.seed(), request.key()), &cost,
                    request.train() ? &pending.saved : nullptr);
  if (!outputs.ok()) return outputs.status();
  ForwardResponse response;
  response.set_num_samples(samples);
  const bool has_targets = request.targets().shape_size() > 0;
  if (has_targets) {
    const HostTensor& y = outputs->at(graph.outputs().front());
    absl::StatusOr<HostTensor> targets =
        FromProto(request.targets(), "ForwardRequest.targets");
    if (!targets.ok()) return targets.status();
    if (targets->shape != y.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ForwardRequest.targets has shape ", targets->ShapeString(),
          " but the segment's output is ", y.ShapeString()));
    }
    double sum = 0;
    pending.loss_grad = HostTensor(y.shape);
    const float scale = 2.0f / static_cast<float>(y.data.size());
    for (size_t i = 0; i < y.data.size(); ++i) {
      const float d = y.data[i] - targets->data[i];
      sum += double(d) * d;
      pending.loss_grad.data[i] = scale * d;
    }
    response.set_loss(sum / double(y.data.size()));
    cost.Elementwise(3.0 * double(y.data.size()));
  }
  if (request.return_outputs() || !has_targets) {
    for (auto& [name, value] : *outputs) {
      if (graph.chain()) {
        ToProto(std::move(value), "outputs", response.mutable_outputs());
      } else {
        ToProto(std::move(value), name, response.add_values());
      }
    }
  }
  if (request.train()) job.tasks.AddPending(request.key(), std::move(pending));
  *response.mutable_cost() = cost.Finish(start);
  return response;
}

absl::StatusOr<BackwardResponse> DeviceExecutor::TakeBackward(BackwardRequest&& request) {
  const auto start = Clock::now();
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<LoadedJob*> found = impl_->jobs.Find(request.key().job_id());
  if (!found.ok()) return found.status();
  LoadedJob& job = **found;
  if (const BackwardResponse* done = job.tasks.Answered(request.key())) {
    return *done;  // a retry: gradients are already accumulated
  }
  absl::StatusOr<Pending*> waiting = job.tasks.FindPending(request.key());
  if (!waiting.ok()) return waiting.status();
  absl::StatusOr<SegmentGraph*> segment = impl_->FindSegment(job, request.key());
  if (!segment.ok()) return segment.status();
  SegmentGraph& graph = **segment;
  Pending& pending = **waiting;
  std::map<std::string, HostTensor> grads;
  if (graph.chain() && request.grad_output().shape_size() > 0) {
    absl::StatusOr<HostTensor> grad =
        FromProto(std::move(*request.mutable_grad_output()), "BackwardRequest.grad_output");
    if (!grad.ok()) return grad.status();
    grads[graph.outputs().front()] = std::move(*grad);
  } else if (!graph.chain()) {
    absl::StatusOr<std::map<std::string, HostTensor>> named =
        NamedTensors(request.mutable_grad_values(), "BackwardRequest.grad_values");
    if (!named.ok()) return named.status();
    grads = std::move(*named);
  }
  if (!pending.loss_grad.data.empty()) {
    grads.try_emplace(graph.outputs().front(), std::move(pending.loss_grad));
  }
  if (grads.empty()) {
    return absl::InvalidArgumentError(
        "BackwardRequest carries no gradient and the forward computed no loss");
  }
  CostBuilder cost(impl_->node);
  absl::StatusOr<std::map<std::string, HostTensor>> input_grads =
      graph.Backward(pending.saved, std::move(grads), &cost);
  if (!input_grads.ok()) return input_grads.status();
  double grad_sq = 0;
  for (const auto& [name, p] : graph.params()) {
    for (float v : p.grad) grad_sq += double(v) * v;
  }
  BackwardResponse response;
  response.set_grad_norm(std::sqrt(grad_sq));
  for (auto& [name, g] : *input_grads) {
    if (graph.chain()) {
      ToProto(std::move(g), "grad_input", response.mutable_grad_input());
    } else {
      ToProto(std::move(g), name, response.add_grad_values());
    }
  }
  *response.mutable_cost() = cost.Finish(start);
  job.tasks.FinishBackward(request.key(), response);
  return response;
}

absl::StatusOr<ApplyUpdateResponse> DeviceExecutor::ApplyUpdate(
    const ApplyUpdateRequest& request) {
  const auto start = Clock::now();
  if (absl::Status rate = CheckLearningRate(request); !rate.ok()) return rate;
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<LoadedJob*> found = impl_->jobs.Find(request.job_id());
  if (!found.ok()) return found.status();
  LoadedJob& job = **found;
  ApplyUpdateResponse response;
  CostBuilder cost(impl_->node);
  if (job.tasks.Applied(request.step())) {
    response.set_applied(false);
    *response.mutable_cost() = cost.Finish(start);
    return response;
  }
  ++job.adam_steps;
  for (auto& [segment_name, graph] : job.segments) {
    for (auto& [name, p] : graph->params()) {
      if (!p.trainable) continue;
      if (p.grad.empty()) p.grad.assign(p.value.size(), 0.0f);
      AdamUpdate(job.optimizer, job.adam_steps - p.adam_lag, request.learning_rate(), p.value,
                 p.grad, p.adam_m, p.adam_v);
      // About ten element-wise operations per parameter for Adam.
      cost.Elementwise(10.0 * double(p.value.size()));
    }
    // Trained weights in ReRAM (a what-if): every update rewrites the cells.
    if (absl::Status s = graph->Reprogram(&cost); !s.ok()) return s;
  }
  job.tasks.Apply(request.step());
  response.set_applied(true);
  *response.mutable_cost() = cost.Finish(start);
  return response;
}

absl::StatusOr<std::vector<TensorChunk>> DeviceExecutor::Snapshot(
    const std::string& job_id, int64_t max_chunk_bytes,
    const std::vector<std::string>& names, bool optimizer_state) {
  auto wanted = [&](const std::string& name) {
    return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
  };
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<LoadedJob*> found = impl_->jobs.Find(job_id);
  if (!found.ok()) return found.status();
  std::vector<TensorChunk> chunks;
  for (const auto& [segment_name, graph] : (*found)->segments) {
    for (const auto& [name, p] : graph->params()) {
      if (!wanted(name)) continue;
      for (TensorChunk& c : SplitIntoChunks(name, p.shape, p.value.data(), max_chunk_bytes)) {
        chunks.push_back(std::move(c));
      }
      if (optimizer_state && p.crossbars) {
        const std::vector<float> read = EncodeReadState(p.crossbars->read_state());
        for (TensorChunk& c : SplitIntoChunks(name + kReramRead, {int64_t(read.size())},
                                              read.data(), max_chunk_bytes)) {
          chunks.push_back(std::move(c));
        }
      }
      if (!optimizer_state || !p.trainable || p.adam_m.size() != p.value.size()) continue;
      for (const auto& [suffix, state] : {std::pair{kExpAvgSuffix, &p.adam_m}, {kExpAvgSqSuffix, &p.adam_v}}) {
        for (TensorChunk& c :
             SplitIntoChunks(name + suffix, p.shape, state->data(), max_chunk_bytes)) {
          chunks.push_back(std::move(c));
        }
      }
    }
  }
  return chunks;
}

absl::Status DeviceExecutor::Release(const std::string& job_id) {
  absl::MutexLock lock(&impl_->mu);
  impl_->jobs.Erase(job_id);
  return absl::OkStatus();
}

std::vector<std::string> DeviceExecutor::Jobs() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->jobs.Ids();
}

}  // namespace hpt
