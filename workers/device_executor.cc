#include "workers/device_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/cost_util.h"
#include "common/tensor_codec.h"
#include "devices/blas.h"

namespace hpt {
namespace {

using Clock = std::chrono::steady_clock;
using PendingKey = std::tuple<int64_t, int32_t, std::string>;

PendingKey KeyOf(const TaskKey& key) {
  return {key.step(), key.micro_batch(), key.segment()};
}

// Cost of one task, assembled from its parts.
class CostBuilder {
 public:
  explicit CostBuilder(const std::string& kind) { report_.set_device_kind(kind); }

  void Systolic(const SystolicReport& r) {
    CostReport part;
    part.set_simulated_s(r.latency_s);
    part.set_energy_j(r.energy_j);
    auto& c = *part.mutable_counters();
    c["macs"] = double(r.macs);
    c["cycles"] = double(r.total_cycles);
    c["stall_cycles"] = double(r.stall_cycles);
    c["sram_reads"] = double(r.sram_ifmap_reads + r.sram_filter_reads);
    c["sram_writes"] = double(r.sram_ofmap_writes);
    c["dram_words"] =
        double(r.dram_ifmap_reads + r.dram_filter_reads + r.dram_ofmap_writes);
    c["util_weighted_cycles"] = r.overall_util_pct / 100.0 * double(r.total_cycles);
    AddCost(part, &report_);
  }

  void Reram(const ReramReport& r) {
    CostReport part;
    part.set_simulated_s(r.latency_s);
    part.set_energy_j(r.energy_j);
    auto& c = *part.mutable_counters();
    c["crossbar_activations"] = double(r.crossbar_activations);
    c["adc_conversions"] = double(r.adc_conversions);
    c["dac_activations"] = double(r.dac_activations);
    c["cell_writes"] = double(r.cell_writes);
    c["max_cell_writes"] = double(r.max_cell_writes);
    c["worst_wear"] = r.worst_wear;
    AddCost(part, &report_);
  }

  void Elementwise(double ops, double lanes, double clock_hz, double energy_per_op) {
    CostReport part;
    part.set_simulated_s(std::ceil(ops / lanes) / clock_hz);
    part.set_energy_j(ops * energy_per_op);
    (*part.mutable_counters())["elementwise_ops"] = ops;
    AddCost(part, &report_);
  }

  CostReport Finish(Clock::time_point start) {
    report_.set_measured_s(std::chrono::duration<double>(Clock::now() - start).count());
    return report_;
  }

 private:
  CostReport report_;
};

struct Linear {
  std::string weight_name, bias_name;
  bool trainable = false;
  int64_t in = 0, out = 0;
  std::vector<float> w;  // [out, in]
  std::vector<float> b;  // [out] or empty
  std::vector<float> gw, gb, mw, vw, mb, vb;
  std::unique_ptr<ReramLayer> reram;  // kind reram: W^T programmed
};

struct Op {
  SegmentOp::Type type;
  int linear = -1;  // index into Job::linears
};

struct Pending {
  std::vector<std::vector<float>> op_inputs;  // input of each op
  std::vector<int64_t> input_shape;
  int64_t rows = 0;
  std::vector<float> loss_grad;  // set when the forward computed the loss
  int64_t width_out = 0;
};

struct Job {
  std::vector<Op> ops;
  std::vector<Linear> linears;
  OptimizerConfig optimizer;
  std::map<PendingKey, Pending> pending;
  std::map<PendingKey, BackwardResponse> backward_done;
  int64_t last_applied_step = -1;
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

std::vector<float> Transpose(const std::vector<float>& a, int64_t rows, int64_t cols) {
  std::vector<float> t(a.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  }
  return t;
}

}  // namespace

struct DeviceExecutor::Impl {
  Options options;
  mutable absl::Mutex mu;
  std::map<std::string, std::unique_ptr<Job>> jobs ABSL_GUARDED_BY(mu);

  bool reram() const { return options.kind == "reram"; }
  double lanes() const {
    return double(reram() ? options.reram.crossbar_cols : options.systolic.cols);
  }
  double clock() const {
    return reram() ? options.reram.clock_hz : options.systolic.clock_hz;
  }
  void Elementwise(CostBuilder& cost, double ops) const {
    cost.Elementwise(ops, lanes(), clock(), options.elementwise_energy_j);
  }
  // A digital GEMM on this node: the systolic array, or for ReRAM nodes a
  // digital unit costed as a systolic array of the node's clock.
  void DigitalGemm(CostBuilder& cost, int64_t m, int64_t n, int64_t k) const {
    SystolicConfig c = options.systolic;
    if (reram()) c.clock_hz = options.reram.clock_hz;
    cost.Systolic(SimulateGemm(c, {m, n, k}));
  }

  absl::StatusOr<Job*> Find(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = jobs.find(id);
    if (it == jobs.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job '", id, "' has no segment on this ", options.kind,
          " worker; call LoadParameters first"));
    }
    return it->second.get();
  }
};

DeviceExecutor::DeviceExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceExecutor::~DeviceExecutor() = default;

absl::StatusOr<std::unique_ptr<DeviceExecutor>> DeviceExecutor::Create(
    const Options& options) {
  if (options.kind != "reram" && options.kind != "systolic") {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeviceExecutor kind '", options.kind, "' is not reram or systolic"));
  }
  if (absl::Status s = ValidateSystolicConfig(options.systolic); !s.ok()) return s;
  if (absl::Status s = ValidateReramConfig(options.reram); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  return std::unique_ptr<DeviceExecutor>(new DeviceExecutor(std::move(impl)));
}

std::string DeviceExecutor::device_name() const {
  const Options& o = impl_->options;
  if (impl_->reram()) {
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
  const SegmentSpec& segment = header.segment();
  if (segment.ops().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LoadParametersHeader.segment has no ops: a ", impl_->options.kind,
        " worker runs a segment, not a whole model"));
  }
  auto job = std::make_unique<Job>();
  job->optimizer = header.optimizer();
  CostBuilder cost(impl_->options.kind);
  LoadParametersResponse response;
  int64_t width = -1;  // output width of the previous op
  for (int i = 0; i < segment.ops_size(); ++i) {
    const SegmentOp& spec = segment.ops(i);
    Op op{spec.type(), -1};
    if (spec.type() == SegmentOp::LINEAR) {
      auto w = parameters.find(spec.weight());
      if (w == parameters.end() || w->second.shape.size() != 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            "segment op ", i, ": weight '", spec.weight(),
            "' must be sent as a 2-D tensor [out, in]"));
      }
      Linear lin;
      lin.weight_name = spec.weight();
      lin.bias_name = spec.bias();
      lin.trainable = spec.trainable();
      lin.out = w->second.shape[0];
      lin.in = w->second.shape[1];
      if (width >= 0 && width != lin.in) {
        return absl::InvalidArgumentError(absl::StrCat(
            "segment op ", i, ": weight '", spec.weight(), "' takes ", lin.in,
            " inputs but the previous op gives ", width));
      }
      lin.w = std::move(w->second.data);
      if (!spec.bias().empty()) {
        auto b = parameters.find(spec.bias());
        if (b == parameters.end() || b->second.shape != std::vector<int64_t>{lin.out}) {
          return absl::InvalidArgumentError(absl::StrCat(
              "segment op ", i, ": bias '", spec.bias(), "' must be sent as [",
              lin.out, "]"));
        }
        lin.b = std::move(b->second.data);
      }
      if (impl_->reram()) {
        absl::StatusOr<ReramLayer> layer =
            ReramLayer::Create(impl_->options.reram, lin.in, lin.out);
        if (!layer.ok()) return layer.status();
        lin.reram = std::make_unique<ReramLayer>(std::move(*layer));
        const std::vector<float> wt = Transpose(lin.w, lin.out, lin.in);
        absl::StatusOr<ReramReport> programmed = lin.reram->Program(wt.data());
        if (!programmed.ok()) return programmed.status();
        cost.Reram(*programmed);
      }
      response.set_num_parameters(response.num_parameters() + lin.w.size() +
                                  lin.b.size());
      response.set_num_tensors(response.num_tensors() + 1 + !lin.b.empty());
      width = lin.out;
      op.linear = static_cast<int>(job->linears.size());
      job->linears.push_back(std::move(lin));
    } else if (spec.type() != SegmentOp::RELU) {
      return absl::InvalidArgumentError(
          absl::StrCat("segment op ", i, " has an unknown type"));
    }
    job->ops.push_back(op);
  }
  *response.mutable_cost() = cost.Finish(start);
  absl::MutexLock lock(&impl_->mu);
  impl_->jobs[header.job_id()] = std::move(job);
  return response;
}

absl::Status DeviceExecutor::JoinGroup(const JoinGroupRequest&) {
  return absl::UnimplementedError(absl::StrCat(
      impl_->options.kind, " workers do not join data-parallel groups"));
}

absl::StatusOr<ForwardResponse> DeviceExecutor::Forward(const ForwardRequest& request) {
  const auto start = Clock::now();
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<Job*> found = impl_->Find(request.key().job_id());
  if (!found.ok()) return found.status();
  Job& job = **found;
  absl::StatusOr<HostTensor> input = FromProto(request.inputs(), "ForwardRequest.inputs");
  if (!input.ok()) return input.status();
  const int64_t width_in =
      job.ops.front().linear >= 0 ? job.linears[job.ops.front().linear].in
                                  : (input->shape.empty() ? 0 : input->shape.back());
  if (input->shape.empty() || input->shape.back() != width_in || input->num_elements() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ForwardRequest.inputs must have shape [..., ", width_in, "], got ",
        input->ShapeString()));
  }
  CostBuilder cost(impl_->options.kind);
  Pending pending;
  pending.input_shape = input->shape;
  pending.rows = input->num_elements() / width_in;
  const int64_t rows = pending.rows;
  std::vector<float> x = std::move(input->data);
  int64_t width = width_in;
  for (const Op& op : job.ops) {
    if (request.train()) pending.op_inputs.push_back(x);
    if (op.type == SegmentOp::RELU) {
      for (float& v : x) v = std::max(v, 0.0f);
      impl_->Elementwise(cost, double(x.size()));
      continue;
    }
    Linear& lin = job.linears[op.linear];
    std::vector<float> y(rows * lin.out);
    if (impl_->reram()) {
      absl::StatusOr<ReramReport> read = lin.reram->Forward(x.data(), rows, y.data());
      if (!read.ok()) return read.status();
      cost.Reram(*read);
    } else {
      SystolicGemmBt(impl_->options.systolic, x.data(), lin.w.data(), rows, lin.out,
                     lin.in, y.data());
      cost.Systolic(SimulateGemm(impl_->options.systolic, {rows, lin.out, lin.in}));
    }
    if (!lin.b.empty()) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t o = 0; o < lin.out; ++o) y[r * lin.out + o] += lin.b[o];
      }
      impl_->Elementwise(cost, double(y.size()));
    }
    x = std::move(y);
    width = lin.out;
  }
  ForwardResponse response;
  response.set_num_samples(pending.input_shape.empty() ? 0 : pending.input_shape[0]);
  std::vector<int64_t> out_shape = pending.input_shape;
  out_shape.back() = width;
  pending.width_out = width;
  if (request.targets().shape_size() > 0) {
    absl::StatusOr<HostTensor> targets =
        FromProto(request.targets(), "ForwardRequest.targets");
    if (!targets.ok()) return targets.status();
    if (targets->shape != out_shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ForwardRequest.targets has shape ", targets->ShapeString(),
          " but the segment's output is [", absl::StrJoin(out_shape, ", "), "]"));
    }
    double sum = 0;
    pending.loss_grad.resize(x.size());
    const float scale = 2.0f / static_cast<float>(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float d = x[i] - targets->data[i];
      sum += double(d) * d;
      pending.loss_grad[i] = scale * d;
    }
    response.set_loss(sum / double(x.size()));
    impl_->Elementwise(cost, 3.0 * double(x.size()));
  }
  if (request.return_outputs() || request.targets().shape_size() == 0) {
    FloatsToProto(x.data(), out_shape, "outputs", response.mutable_outputs());
  }
  if (request.train()) job.pending[KeyOf(request.key())] = std::move(pending);
  *response.mutable_cost() = cost.Finish(start);
  return response;
}

absl::StatusOr<BackwardResponse> DeviceExecutor::Backward(const BackwardRequest& request) {
  const auto start = Clock::now();
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<Job*> found = impl_->Find(request.key().job_id());
  if (!found.ok()) return found.status();
  Job& job = **found;
  const PendingKey key = KeyOf(request.key());
  if (auto done = job.backward_done.find(key); done != job.backward_done.end()) {
    return done->second;  // a retry: gradients are already accumulated
  }
  auto it = job.pending.find(key);
  if (it == job.pending.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no pending forward for job '", request.key().job_id(), "' step ",
        request.key().step(), " segment '", request.key().segment(), "'"));
  }
  Pending& pending = it->second;
  const int64_t rows = pending.rows;
  std::vector<float> g;
  if (request.grad_output().shape_size() > 0) {
    absl::StatusOr<HostTensor> grad =
        FromProto(request.grad_output(), "BackwardRequest.grad_output");
    if (!grad.ok()) return grad.status();
    if (grad->num_elements() != rows * pending.width_out) {
      return absl::InvalidArgumentError(absl::StrCat(
          "BackwardRequest.grad_output has shape ", grad->ShapeString(),
          "; the forward produced ", rows, " rows of ", pending.width_out));
    }
    g = std::move(grad->data);
  } else if (!pending.loss_grad.empty()) {
    g = pending.loss_grad;
  } else {
    return absl::InvalidArgumentError(
        "BackwardRequest.grad_output is empty and the forward computed no loss");
  }
  CostBuilder cost(impl_->options.kind);
  double grad_sq = 0;
  for (int i = static_cast<int>(job.ops.size()) - 1; i >= 0; --i) {
    const Op& op = job.ops[i];
    const std::vector<float>& x = pending.op_inputs[i];
    if (op.type == SegmentOp::RELU) {
      for (size_t e = 0; e < g.size(); ++e) {
        if (x[e] <= 0) g[e] = 0;
      }
      impl_->Elementwise(cost, double(g.size()));
      continue;
    }
    Linear& lin = job.linears[op.linear];
    if (lin.trainable) {
      // dW[out, in] += g^T x; db += column sums of g.
      if (lin.gw.empty()) lin.gw.assign(lin.w.size(), 0.0f);
      std::vector<float> gt = Transpose(g, rows, lin.out);
      Sgemm(lin.out, lin.in, rows, 1.0f, gt.data(), rows, x.data(), lin.in, 1.0f,
            lin.gw.data(), lin.in);
      impl_->DigitalGemm(cost, lin.out, lin.in, rows);
      if (!lin.b.empty()) {
        if (lin.gb.empty()) lin.gb.assign(lin.b.size(), 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t o = 0; o < lin.out; ++o) lin.gb[o] += g[r * lin.out + o];
        }
        impl_->Elementwise(cost, double(g.size()));
      }
    }
    std::vector<float> gx(rows * lin.in);
    if (impl_->reram()) {
      absl::StatusOr<ReramReport> read = lin.reram->Transposed(g.data(), rows, gx.data());
      if (!read.ok()) return read.status();
      cost.Reram(*read);
    } else {
      SystolicGemm(impl_->options.systolic, g.data(), lin.w.data(), rows, lin.in,
                   lin.out, gx.data());
      cost.Systolic(SimulateGemm(impl_->options.systolic, {rows, lin.in, lin.out}));
    }
    g = std::move(gx);
  }
  for (const Linear& lin : job.linears) {
    for (float v : lin.gw) grad_sq += double(v) * v;
    for (float v : lin.gb) grad_sq += double(v) * v;
  }
  BackwardResponse response;
  response.set_grad_norm(std::sqrt(grad_sq));
  FloatsToProto(g.data(), pending.input_shape, "grad_input", response.mutable_grad_input());
  *response.mutable_cost() = cost.Finish(start);
  job.pending.erase(it);
  job.backward_done[key] = response;
  return response;
}

absl::StatusOr<ApplyUpdateResponse> DeviceExecutor::ApplyUpdate(
    const ApplyUpdateRequest& request) {
  const auto start = Clock::now();
  if (!(request.learning_rate() > 0) || !std::isfinite(request.learning_rate())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ApplyUpdateRequest.learning_rate must be positive, got ",
        request.learning_rate()));
  }
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<Job*> found = impl_->Find(request.job_id());
  if (!found.ok()) return found.status();
  Job& job = **found;
  ApplyUpdateResponse response;
  CostBuilder cost(impl_->options.kind);
  if (request.step() <= job.last_applied_step) {
    response.set_applied(false);
    *response.mutable_cost() = cost.Finish(start);
    return response;
  }
  ++job.adam_steps;
  for (Linear& lin : job.linears) {
    if (!lin.trainable) continue;
    if (lin.gw.empty()) lin.gw.assign(lin.w.size(), 0.0f);
    AdamUpdate(job.optimizer, job.adam_steps, request.learning_rate(), lin.w, lin.gw,
               lin.mw, lin.vw);
    // About ten element-wise operations per parameter for Adam.
    impl_->Elementwise(cost, 10.0 * double(lin.w.size()));
    if (!lin.b.empty()) {
      if (lin.gb.empty()) lin.gb.assign(lin.b.size(), 0.0f);
      AdamUpdate(job.optimizer, job.adam_steps, request.learning_rate(), lin.b,
                 lin.gb, lin.mb, lin.vb);
      impl_->Elementwise(cost, 10.0 * double(lin.b.size()));
    }
    if (lin.reram) {
      // Trained weights in ReRAM: every update rewrites the crossbars.
      const std::vector<float> wt = Transpose(lin.w, lin.out, lin.in);
      absl::StatusOr<ReramReport> programmed = lin.reram->Program(wt.data());
      if (!programmed.ok()) return programmed.status();
      cost.Reram(*programmed);
    }
  }
  job.last_applied_step = request.step();
  job.backward_done.clear();
  for (auto it = job.pending.begin(); it != job.pending.end();) {
    it = std::get<0>(it->first) <= request.step() ? job.pending.erase(it) : std::next(it);
  }
  response.set_applied(true);
  *response.mutable_cost() = cost.Finish(start);
  return response;
}

absl::StatusOr<std::vector<TensorChunk>> DeviceExecutor::Snapshot(
    const std::string& job_id, int64_t max_chunk_bytes,
    const std::vector<std::string>& names) {
  auto wanted = [&](const std::string& name) {
    return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
  };
  absl::MutexLock lock(&impl_->mu);
  absl::StatusOr<Job*> found = impl_->Find(job_id);
  if (!found.ok()) return found.status();
  std::vector<TensorChunk> chunks;
  for (const Linear& lin : (*found)->linears) {
    if (wanted(lin.weight_name)) {
      for (TensorChunk& c : SplitIntoChunks(lin.weight_name, {lin.out, lin.in},
                                            lin.w.data(), max_chunk_bytes)) {
        chunks.push_back(std::move(c));
      }
    }
    if (!lin.b.empty() && wanted(lin.bias_name)) {
      for (TensorChunk& c :
           SplitIntoChunks(lin.bias_name, {lin.out}, lin.b.data(), max_chunk_bytes)) {
        chunks.push_back(std::move(c));
      }
    }
  }
  return chunks;
}

absl::Status DeviceExecutor::Release(const std::string& job_id) {
  absl::MutexLock lock(&impl_->mu);
  impl_->jobs.erase(job_id);
  return absl::OkStatus();
}

std::vector<std::string> DeviceExecutor::Jobs() const {
  absl::MutexLock lock(&impl_->mu);
  std::vector<std::string> ids;
  for (const auto& [id, job] : impl_->jobs) ids.push_back(id);
  return ids;
}

}  // namespace hpt
