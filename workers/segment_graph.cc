#include "workers/segment_graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cost_util.h"
#include "devices/blas.h"
#include "devices/cpu_kernels.h"

namespace hpt {
// The systolic segments' element-wise work (HPT_VECTOR_CLONES:
// devices/cpu_kernels.h).
namespace graph_kernels {

HPT_VECTOR_CLONES void Relu(float* y, int64_t n) {
  for (int64_t e = 0; e < n; ++e) y[e] = y[e] > 0.0f ? y[e] : 0.0f;
}
// g where x > 0, else 0.
HPT_VECTOR_CLONES void ReluBackward(float* g, const float* x, int64_t n) {
  for (int64_t e = 0; e < n; ++e) g[e] = x[e] > 0.0f ? g[e] : 0.0f;
}
HPT_VECTOR_CLONES void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t e = 0; e < n; ++e) y[e] += x[e];
}
// One row of LayerNorm in place: y = (y - mean) / sigma * gamma + beta.
// Returns {mean, 1 / sigma}; sums in double.
HPT_VECTOR_CLONES std::pair<float, float> LayerNormRow(float* y, const float* gamma,
                                                       const float* beta, int64_t cols,
                                                       double eps) {
  double mean = 0;
#pragma omp simd reduction(+ : mean)
  for (int64_t c = 0; c < cols; ++c) mean += y[c];
  mean /= double(cols);
  double var = 0;
#pragma omp simd reduction(+ : var)
  for (int64_t c = 0; c < cols; ++c) var += (y[c] - mean) * (y[c] - mean);
  var /= double(cols);
  const float rstd = float(1.0 / std::sqrt(var + eps));
  const float m = float(mean);
  for (int64_t c = 0; c < cols; ++c) y[c] = (y[c] - m) * rstd * gamma[c] + beta[c];
  return {m, rstd};
}
// One row's LayerNorm input gradient from its output gradient g, with x-hat
// rebuilt from the row's input x and its statistics (written to `xhat`).
HPT_VECTOR_CLONES void LayerNormBackwardRow(const float* g, const float* gamma,
                                            const float* x, float mean, float rstd,
                                            int64_t cols, float* xhat, float* gy,
                                            float* gx) {
  double mean_g = 0, mean_gx = 0;
#pragma omp simd reduction(+ : mean_g, mean_gx)
  for (int64_t c = 0; c < cols; ++c) {
    xhat[c] = (x[c] - mean) * rstd;
    gy[c] = g[c] * gamma[c];
    mean_g += gy[c];
    mean_gx += double(gy[c]) * xhat[c];
  }
  mean_g /= double(cols);
  mean_gx /= double(cols);
  for (int64_t c = 0; c < cols; ++c) {
    gx[c] = float(rstd * (gy[c] - mean_g - xhat[c] * mean_gx));
  }
}

// e^x in single precision, vectorisable: x = n ln 2 + r with |r| <= ln 2 / 2
// (ln 2 split in two for an exact product), e^r from Cephes' expf
// polynomial (S. Moshier, Cephes Math Library, expf.c), 2^n put into the
// exponent bits. Within 1 ulp of e^x over [-87, 0], the range softmax uses
// (0.99 ulp worst, 8.3e-8 relative, against double exp at 2e7 points).
// Inputs are clamped to [-87.3, 88.7], where the result stays a normal
// float.
__attribute__((always_inline)) inline float ExpF(float x) {
  x = std::min(88.7f, std::max(-87.3f, x));
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;
  r -= n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return e * scale;
}
// A row of scores s in place: softmax(s * scale). The sum in double.
HPT_VECTOR_CLONES void SoftmaxRow(float* s, int64_t n, float scale) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t c = 0; c < n; ++c) mx = std::max(mx, s[c] * scale);
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < n; ++c) {
    s[c] = ExpF(s[c] * scale - mx);
    sum += s[c];
  }
  const float inv = float(1.0 / sum);
  for (int64_t c = 0; c < n; ++c) s[c] *= inv;
}
// A row of the softmax's input gradient in place: given dP (d) and P (p),
// dS = P (dP - rowsum(dP P)) * scale.
HPT_VECTOR_CLONES void SoftmaxBackwardRow(float* d, const float* p, int64_t n, float scale) {
  double dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t c = 0; c < n; ++c) dot += double(d[c]) * p[c];
  const float fdot = float(dot);
  for (int64_t c = 0; c < n; ++c) d[c] = p[c] * (d[c] - fdot) * scale;
}
}  // namespace graph_kernels

namespace {

using Clock = std::chrono::steady_clock;

int64_t Cols(const HostTensor& t) { return t.shape.empty() ? 0 : t.shape.back(); }
int64_t Rows(const HostTensor& t) {
  const int64_t cols = Cols(t);
  return cols == 0 ? 0 : t.num_elements() / cols;
}

HostTensor WithLastDim(const HostTensor& like, int64_t last) {
  std::vector<int64_t> shape = like.shape;
  shape.back() = last;
  return HostTensor(shape);
}

std::vector<float> Transpose(const float* a, int64_t rows, int64_t cols) {
  std::vector<float> t(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  }
  return t;
}

void AddInto(FloatBuffer& acc, const FloatBuffer& v) {
  if (acc.empty()) {
    acc = v;
    return;
  }
  graph_kernels::AddInPlace(acc.data(), v.data(), static_cast<int64_t>(v.size()));
}

// Products with the node's numerics: the systolic array's (fp32 or bf16
// operands), or fp32 on a ReRAM node's digital unit.
void Gemm(const DeviceNode& node, const float* a, const float* b, int64_t m,
          int64_t n, int64_t k, float* out) {
  if (node.is_reram()) {
    Sgemm(m, n, k, 1.0f, a, k, b, n, 0.0f, out, n);
  } else {
    SystolicGemm(node.systolic, a, b, m, n, k, out);
  }
}
void GemmBt(const DeviceNode& node, const float* a, const float* b, int64_t m,
            int64_t n, int64_t k, float* out) {
  if (node.is_reram()) {
    SgemmBt(m, n, k, 1.0f, a, k, b, k, 0.0f, out, n);
  } else {
    SystolicGemmBt(node.systolic, a, b, m, n, k, out);
  }
}
// `n` values as the node's products take them: a systolic array's operand
// (bf16-rounded in bf16 mode), or the values themselves on a ReRAM node's
// digital unit.
const float* Operand(const DeviceNode& node, const float* data, int64_t n,
                     std::vector<float>* storage) {
  return node.is_reram() ? data : SystolicOperand(node.systolic, data, n, storage);
}

// Cost of `times` products [m x k] x [k x n] on the array (a ReRAM node's
// digital unit is costed as the same array at the node's clock).
void GemmCost(const DeviceNode& node, CostBuilder* cost, int64_t m, int64_t n,
              int64_t k, double times = 1) {
  SystolicConfig config = node.systolic;
  if (node.is_reram()) config.clock_hz = node.reram.clock_hz;
  cost->Systolic(SimulateGemm(config, {m, n, k}), times);
}

// Weight gradient: acc[n x k] += g[m x n]^T x[m x k], accumulated by the
// product itself (g read transposed in place, no copy).
void AddWeightGrad(const DeviceNode& node, CostBuilder* cost, const float* g,
                   const float* x, int64_t m, int64_t n, int64_t k,
                   std::vector<float>& acc) {
  std::vector<float> gs, xs;
  const float* ga = Operand(node, g, m * n, &gs);
  const float* xa = Operand(node, x, m * k, &xs);
  const float beta = acc.empty() ? 0.0f : 1.0f;
  acc.resize(n * k);
  SgemmAt(n, k, m, 1.0f, ga, n, xa, k, beta, acc.data(), k);
  GemmCost(node, cost, n, k, m);
}

uint64_t MixSeed(uint64_t seed, int op) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * uint64_t(op + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Rows per parallel chunk of a row-wise op: about 16 Ki elements.
int64_t RowGrain(int64_t cols) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, cols));
}

// (Sample, head) pairs per parallel chunk of attention: 1 while a head's
// products are small enough that OpenBLAS runs them on the calling thread
// (under its threading threshold, 65,536 x 4 multiply-adds by default),
// else all of them, inline, so the products thread inside BLAS instead of
// BLAS threads starting under each of ours.
int64_t PairGrain(int64_t pairs, int64_t tokens, int64_t hd) {
  return tokens * tokens * hd < (int64_t{1} << 18) ? 1 : pairs + 1;
}

constexpr double kLayerNormOps = 8;  // mean, variance, normalise, scale, shift
constexpr double kSoftmaxOps = 5;    // max, subtract, exp, sum, divide

}  // namespace

CostBuilder::CostBuilder(const std::string& kind) { report_.set_device_kind(kind); }

void CostBuilder::Systolic(const SystolicReport& r, double times) {
  CostReport part;
  part.set_simulated_s(r.latency_s * times);
  part.set_energy_j(r.energy_j * times);
  auto& c = *part.mutable_counters();
  c["macs"] = double(r.macs) * times;
  c["cycles"] = double(r.total_cycles) * times;
  c["stall_cycles"] = double(r.stall_cycles) * times;
  c["sram_reads"] = double(r.sram_ifmap_reads + r.sram_filter_reads) * times;
  c["sram_writes"] = double(r.sram_ofmap_writes) * times;
  c["dram_words"] =
      double(r.dram_ifmap_reads + r.dram_filter_reads + r.dram_ofmap_writes) * times;
  c["util_weighted_cycles"] =
      r.overall_util_pct / 100.0 * double(r.total_cycles) * times;
  AddCost(part, &report_);
}

void CostBuilder::Reram(const ReramReport& r, const std::string& concurrent) {
  CostReport part;
  double latency_s = r.latency_s;
  if (!concurrent.empty()) {
    // Only what this read adds beyond the group's longest so far.
    double& longest = group_latency_s_[concurrent];
    latency_s = std::max(0.0, r.latency_s - longest);
    longest = std::max(longest, r.latency_s);
  }
  part.set_simulated_s(latency_s);
  part.set_energy_j(r.energy_j);
  auto& c = *part.mutable_counters();
  c["crossbar_activations"] = double(r.crossbar_activations);
  c["adc_conversions"] = double(r.adc_conversions);
  c["cell_writes"] = double(r.cell_writes);
  c["max_cell_writes"] = double(r.max_cell_writes);
  c["worst_wear"] = r.worst_wear;
  AddCost(part, &report_);
}

void CostBuilder::Elementwise(const DeviceNode& node, double ops) {
  CostReport part;
  const VectorUnitCost c =
      ElementwiseCost(node.lanes(), node.clock_hz(), ops, node.elementwise_energy_j);
  part.set_simulated_s(c.latency_s);
  part.set_energy_j(c.energy_j);
  (*part.mutable_counters())["elementwise_ops"] = ops;
  AddCost(part, &report_);
}

CostReport CostBuilder::Finish(Clock::time_point start) {
  report_.set_measured_s(std::chrono::duration<double>(Clock::now() - start).count());
  return report_;
}

SegmentGraph::SegmentGraph(const DeviceNode& node, SegmentSpec spec)
    : node_(node), spec_(std::move(spec)) {}

absl::StatusOr<std::unique_ptr<SegmentGraph>> SegmentGraph::Create(
    const DeviceNode& node, const SegmentSpec& spec,
    std::map<std::string, HostTensor>& params, CostBuilder* cost) {
  if (spec.ops().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment '", spec.name(), "' has no ops: a ", node.kind,
        " worker runs a segment, not a whole model"));
  }
  std::unique_ptr<SegmentGraph> graph(new SegmentGraph(node, spec));
  if (absl::Status s = graph->Compile(params, cost); !s.ok()) return s;
  return graph;
}

absl::Status SegmentGraph::Compile(std::map<std::string, HostTensor>& params,
                                   CostBuilder* cost) {
  const std::string where = absl::StrCat("segment '", spec_.name(), "' op ");
  chain_ = spec_.inputs().empty();
  std::set<std::string> defined;
  if (chain_) {
    inputs_ = {"input"};
  } else {
    inputs_.assign(spec_.inputs().begin(), spec_.inputs().end());
  }
  defined.insert(inputs_.begin(), inputs_.end());
  std::string previous = inputs_.front();
  auto take = [&](int i, const std::string& name, bool trainable,
                  size_t rank) -> absl::StatusOr<SegmentParam*> {
    auto it = params.find(name);
    if (name.empty() || it == params.end() || it->second.shape.size() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, i, ": parameter '", name, "' must be sent as a ", rank,
          "-D tensor"));
    }
    SegmentParam& p = params_[name];
    p.shape = it->second.shape;
    p.value = it->second.data.ToVector();
    p.trainable = trainable;
    params.erase(it);
    return &p;
  };
  for (int i = 0; i < spec_.ops_size(); ++i) {
    SegmentOp& op = *spec_.mutable_ops(i);
    if (chain_) {
      if (op.inputs().empty()) op.add_inputs(previous);
      if (op.output().empty()) op.set_output(absl::StrCat("op", i));
    }
    if (op.inputs().empty() || op.output().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, i, " needs named inputs and an output in a graph segment"));
    }
    for (const std::string& in : op.inputs()) {
      if (!defined.count(in)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, i, " reads '", in, "', which is neither a segment input nor "
            "the output of an earlier op"));
      }
    }
    const bool trainable = op.trainable();
    switch (op.type()) {
      case SegmentOp::LINEAR: {
        absl::StatusOr<SegmentParam*> w = take(i, op.weight(), trainable, 2);
        if (!w.ok()) return w.status();
        const int64_t out = (*w)->shape[0], in = (*w)->shape[1];
        if (!op.bias().empty()) {
          absl::StatusOr<SegmentParam*> b = take(i, op.bias(), trainable, 1);
          if (!b.ok()) return b.status();
          if ((*b)->shape[0] != out) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, i, ": bias '", op.bias(), "' must be [", out, "]"));
          }
        }
        if (node_.is_reram()) {
          absl::StatusOr<ReramLayer> layer = ReramLayer::Create(node_.reram, in, out);
          if (!layer.ok()) return layer.status();
          (*w)->crossbars = std::make_unique<ReramLayer>(std::move(*layer));
          if (op.duplication() > 1) {
            absl::Status copies = (*w)->crossbars->SetDuplication(op.duplication());
            if (!copies.ok()) return copies;
          }
          const std::vector<float> wt = Transpose((*w)->value.data(), out, in);
          absl::StatusOr<ReramReport> programmed = (*w)->crossbars->Program(wt.data());
          if (!programmed.ok()) return programmed.status();
          cost->Reram(*programmed);
        }
        break;
      }
      case SegmentOp::LORA: {
        absl::StatusOr<SegmentParam*> a = take(i, op.weight(), trainable, 2);
        if (!a.ok()) return a.status();
        absl::StatusOr<SegmentParam*> b = take(i, op.weight_b(), trainable, 2);
        if (!b.ok()) return b.status();
        if ((*b)->shape[1] != (*a)->shape[0]) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, i, ": LoRA B '", op.weight_b(), "' is [",
              absl::StrJoin((*b)->shape, ", "), "] but A '", op.weight(),
              "' has rank ", (*a)->shape[0]));
        }
        break;
      }
      case SegmentOp::LAYER_NORM: {
        absl::StatusOr<SegmentParam*> g = take(i, op.weight(), trainable, 1);
        if (!g.ok()) return g.status();
        absl::StatusOr<SegmentParam*> b = take(i, op.bias(), trainable, 1);
        if (!b.ok()) return b.status();
        if ((*b)->shape != (*g)->shape) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, i, ": LayerNorm weight and bias differ in shape"));
        }
        break;
      }
      case SegmentOp::ADD_CONST: {
        auto it = params.find(op.weight());
        if (it == params.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, i, ": constant '", op.weight(), "' was not sent"));
        }
        absl::StatusOr<SegmentParam*> c =
            take(i, op.weight(), false, it->second.shape.size());
        if (!c.ok()) return c.status();
        break;
      }
      case SegmentOp::ATTENTION:
        if (op.inputs_size() != 3 || op.num_heads() <= 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, i, ": ATTENTION takes inputs q, k, v and num_heads > 0"));
        }
        break;
      case SegmentOp::DROPOUT:
        if (op.dropout() < 0 || op.dropout() >= 1) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, i, ": dropout must be in [0, 1), got ", op.dropout()));
        }
        break;
      case SegmentOp::RELU:
      case SegmentOp::ADD:
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(where, i, " has an unknown type"));
    }
    if (op.type() == SegmentOp::ATTENTION && (op.dropout() < 0 || op.dropout() >= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, i, ": attention dropout must be in [0, 1), got ", op.dropout()));
    }
    defined.insert(op.output());
    previous = op.output();
  }
  if (chain_) {
    outputs_ = {previous};
  } else {
    outputs_.assign(spec_.outputs().begin(), spec_.outputs().end());
    for (const std::string& out : outputs_) {
      if (!defined.count(out)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "segment '", spec_.name(), "' output '", out, "' is never computed"));
      }
    }
  }
  last_reader_.assign(spec_.ops_size(), false);
  std::set<std::string> read_later(outputs_.begin(), outputs_.end());
  for (int i = spec_.ops_size() - 1; i >= 0; --i) {
    const SegmentOp& op = spec_.ops(i);
    const std::string& first = op.inputs(0);
    last_reader_[i] = !read_later.count(first) &&
                      std::count(op.inputs().begin(), op.inputs().end(), first) == 1;
    read_later.insert(op.inputs().begin(), op.inputs().end());
  }
  return absl::OkStatus();
}

int64_t SegmentGraph::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, p] : params_) n += int64_t(p.value.size());
  return n;
}

absl::StatusOr<std::map<std::string, HostTensor>> SegmentGraph::Forward(
    std::map<std::string, HostTensor> inputs, uint64_t mask_seed,
    CostBuilder* cost, Saved* saved) {
  const bool train = saved != nullptr;
  if (train) saved->mask_seed = mask_seed;
  std::map<std::string, HostTensor> values;
  for (const std::string& name : inputs_) {
    auto it = inputs.find(name);
    if (it == inputs.end() || it->second.num_elements() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment '", spec_.name(), "' input '", name, "' was not sent"));
    }
    values[name] = std::move(it->second);
  }
  for (int i = 0; i < spec_.ops_size(); ++i) {
    const SegmentOp& op = spec_.ops(i);
    const std::string where = absl::StrCat("segment '", spec_.name(), "' op ", i, ": ");
    HostTensor& x = values.at(op.inputs(0));
    const int64_t rows = Rows(x), cols = Cols(x);
    // An element-wise op's result starts as its first input: the input's
    // own buffer when nothing reads it afterwards in an inference forward
    // (training keeps every value for the backward), else a copy.
    auto input_copy = [&]() -> HostTensor {
      if (!train && last_reader_[i]) return std::move(x);
      return x;
    };
    HostTensor y;
    switch (op.type()) {
      case SegmentOp::LINEAR: {
        SegmentParam& w = params_.at(op.weight());
        const int64_t out = w.shape[0], in = w.shape[1];
        if (cols != in) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "'", op.inputs(0), "' has shape ", x.ShapeString(), " but '",
              op.weight(), "' takes ", in, " inputs"));
        }
        y = WithLastDim(x, out);
        if (w.crossbars) {
          absl::StatusOr<ReramReport> read =
              w.crossbars->Forward(x.data.data(), rows, y.data.data());
          if (!read.ok()) return read.status();
          cost->Reram(*read, "forward:" + op.inputs(0));
        } else {
          GemmBt(node_, x.data.data(), w.value.data(), rows, out, in, y.data.data());
          GemmCost(node_, cost, rows, out, in);
        }
        if (!op.bias().empty()) {
          const std::vector<float>& b = params_.at(op.bias()).value;
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t o = 0; o < out; ++o) y.data[r * out + o] += b[o];
          }
          cost->Elementwise(node_, double(y.data.size()));
        }
        break;
      }
      case SegmentOp::LORA: {
        const SegmentParam& a = params_.at(op.weight());
        const SegmentParam& b = params_.at(op.weight_b());
        const int64_t rank = a.shape[0], in = a.shape[1], out = b.shape[0];
        if (cols != in) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "'", op.inputs(0), "' has shape ", x.ShapeString(),
              " but adapter '", op.weight(), "' takes ", in));
        }
        std::vector<float> h(rows * rank);
        GemmBt(node_, x.data.data(), a.value.data(), rows, rank, in, h.data());
        GemmCost(node_, cost, rows, rank, in);
        y = WithLastDim(x, out);
        GemmBt(node_, h.data(), b.value.data(), rows, out, rank, y.data.data());
        GemmCost(node_, cost, rows, out, rank);
        const float scale = static_cast<float>(op.scale());
        for (float& v : y.data) v *= scale;
        cost->Elementwise(node_, double(y.data.size()));
        if (train) saved->aux[i] = std::move(h);
        break;
      }
      case SegmentOp::ADD: {
        for (int j = 1; j < op.inputs_size(); ++j) {
          const HostTensor& other = values.at(op.inputs(j));
          if (other.shape != x.shape) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, "adding '", op.inputs(j), "' ", other.ShapeString(), " to '",
                op.inputs(0), "' ", x.ShapeString()));
          }
        }
        y = input_copy();
        for (int j = 1; j < op.inputs_size(); ++j) {
          const HostTensor& other = values.at(op.inputs(j));
          graph_kernels::AddInPlace(y.data.data(), other.data.data(), y.num_elements());
        }
        cost->Elementwise(node_, double(y.data.size()) * (op.inputs_size() - 1));
        break;
      }
      case SegmentOp::ADD_CONST: {
        const SegmentParam& c = params_.at(op.weight());
        const size_t n = c.shape.size();
        if (x.shape.size() < n ||
            !std::equal(c.shape.begin(), c.shape.end(), x.shape.end() - n)) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "'", op.inputs(0), "' ", x.ShapeString(),
              " does not end with the shape of '", op.weight(), "' [",
              absl::StrJoin(c.shape, ", "), "]"));
        }
        y = input_copy();
        const size_t period = c.value.size();
        for (size_t e0 = 0; e0 < y.data.size(); e0 += period) {
          float* row = y.data.data() + e0;
          for (size_t e = 0; e < period; ++e) row[e] += c.value[e];
        }
        cost->Elementwise(node_, double(y.data.size()));
        break;
      }
      case SegmentOp::RELU:
        y = input_copy();
        graph_kernels::Relu(y.data.data(), y.num_elements());
        cost->Elementwise(node_, double(y.data.size()));
        break;
      case SegmentOp::DROPOUT:
        y = input_copy();
        if (train && op.dropout() > 0) {
          // The mask is a function of (seed, element): made on the fly here
          // and again in the backward, never stored.
          ApplyDropout(y.data.data(), y.data.data(), y.num_elements(), op.dropout(),
                       MixSeed(mask_seed, i));
          cost->Elementwise(node_, 2.0 * double(y.data.size()));
        }
        break;
      case SegmentOp::LAYER_NORM: {
        const std::vector<float>& gamma = params_.at(op.weight()).value;
        const std::vector<float>& beta = params_.at(op.bias()).value;
        if (cols != int64_t(gamma.size())) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "'", op.inputs(0), "' ", x.ShapeString(), " but LayerNorm '",
              op.weight(), "' normalises ", gamma.size()));
        }
        const double eps = op.eps() > 0 ? op.eps() : 1e-5;
        // In place on y (row by row: a row's statistics are taken before it
        // is overwritten). Training keeps each row's mean and 1/sigma; the
        // backward rebuilds x-hat from the saved input.
        y = input_copy();
        std::vector<float> aux;
        if (train) aux.resize(2 * rows);
        ParallelFor(rows, RowGrain(cols), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const auto [mean, rstd] = graph_kernels::LayerNormRow(
                y.data.data() + r * cols, gamma.data(), beta.data(), cols, eps);
            if (train) {
              aux[2 * r] = mean;
              aux[2 * r + 1] = rstd;
            }
          }
        });
        cost->Elementwise(node_, kLayerNormOps * double(y.data.size()));
        if (train) saved->aux[i] = std::move(aux);
        break;
      }
      case SegmentOp::ATTENTION: {
        const HostTensor& k = values.at(op.inputs(1));
        const HostTensor& v = values.at(op.inputs(2));
        if (x.shape.size() != 3 || k.shape != x.shape || v.shape != x.shape ||
            cols % op.num_heads() != 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "attention needs q, k, v of one shape [batch, tokens, d] with d "
              "divisible by ", op.num_heads(), " heads; got ", x.ShapeString(), ", ",
              k.ShapeString(), ", ", v.ShapeString()));
        }
        const int64_t batch = x.shape[0], tokens = x.shape[1], heads = op.num_heads();
        const int64_t hd = cols / heads;
        const float inv_sqrt = float(1.0 / std::sqrt(double(hd)));
        const bool drop = train && op.dropout() > 0;
        const uint64_t seed = MixSeed(mask_seed, i);
        const int64_t tt = tokens * tokens;
        // Training keeps every head's probabilities for the backward (the
        // dropout mask is made again there); inference needs one scratch
        // matrix per thread.
        std::vector<float> probs(train ? batch * heads * tt : 0);
        y = HostTensor(x.shape);
        // Each head's q, k, v and output are [tokens, hd] blocks with row
        // stride d inside the [batch, tokens, d] tensors: the products read
        // and write them in place (BLAS leading dimensions), no copies. The
        // (sample, head) pairs are independent: split over the threads.
        std::vector<float> qs, ks, vs;
        const float* qd = Operand(node_, x.data.data(), x.num_elements(), &qs);
        const float* kd = Operand(node_, k.data.data(), k.num_elements(), &ks);
        const float* vd = Operand(node_, v.data.data(), v.num_elements(), &vs);
        const int64_t pair_grain = PairGrain(batch * heads, tokens, hd);
        ParallelFor(batch * heads, pair_grain, [&](int64_t begin, int64_t end) {
          std::vector<float> scratch(train ? 0 : tt), weights(drop ? tt : 0), ws;
          for (int64_t pair = begin; pair < end; ++pair) {
            const int64_t b = pair / heads, h = pair % heads;
            const int64_t offset = b * tokens * cols + h * hd;
            float* p = train ? probs.data() + pair * tt : scratch.data();
            SgemmBt(tokens, tokens, hd, 1.0f, qd + offset, cols, kd + offset, cols, 0.0f, p,
                    tokens);
            for (int64_t r = 0; r < tokens; ++r) {
              graph_kernels::SoftmaxRow(p + r * tokens, tokens, inv_sqrt);
            }
            const float* used = p;
            if (drop) {
              ApplyDropout(p, weights.data(), tt, op.dropout(), seed, pair * tt,
                           /*parallel=*/false);
              used = weights.data();
            }
            used = Operand(node_, used, tt, &ws);
            Sgemm(tokens, hd, tokens, 1.0f, used, tokens, vd + offset, cols, 0.0f,
                  y.data.data() + offset, cols);
          }
        });
        const double pairs = double(batch * heads);
        GemmCost(node_, cost, tokens, tokens, hd, pairs);
        GemmCost(node_, cost, tokens, hd, tokens, pairs);
        cost->Elementwise(node_, (kSoftmaxOps + (drop ? 1 : 0)) * pairs * double(tt));
        if (train) saved->aux[i] = std::move(probs);
        break;
      }
      default:
        return absl::InternalError(absl::StrCat(where, "unknown op type"));
    }
    values[op.output()] = std::move(y);
  }
  std::map<std::string, HostTensor> outputs;
  for (const std::string& name : outputs_) {
    outputs[name] = train ? values.at(name) : std::move(values.at(name));
  }
  if (train) saved->values = std::move(values);
  return outputs;
}

absl::StatusOr<std::map<std::string, HostTensor>> SegmentGraph::Backward(
    const Saved& saved, std::map<std::string, HostTensor> grad_outputs,
    CostBuilder* cost) {
  std::map<std::string, HostTensor> grads;
  for (auto& [name, g] : grad_outputs) {
    if (std::find(outputs_.begin(), outputs_.end(), name) == outputs_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "segment '", spec_.name(), "' has no output '", name, "'"));
    }
    const HostTensor& value = saved.values.at(name);
    if (g.num_elements() != value.num_elements()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient of '", name, "' has shape ", g.ShapeString(), "; the forward made ",
          value.ShapeString()));
    }
    g.shape = value.shape;
    grads[name] = std::move(g);
  }
  auto accumulate = [&](const std::string& name, HostTensor g) {
    auto [it, inserted] = grads.try_emplace(name, std::move(g));
    if (!inserted) {
      AddInto(it->second.data, g.data);
      cost->Elementwise(node_, double(g.data.size()));
    }
  };
  for (int i = spec_.ops_size() - 1; i >= 0; --i) {
    const SegmentOp& op = spec_.ops(i);
    auto found = grads.find(op.output());
    if (found == grads.end()) continue;  // nothing downstream depends on it
    HostTensor g = std::move(found->second);
    grads.erase(found);
    const HostTensor& x = saved.values.at(op.inputs(0));
    const int64_t rows = Rows(x), cols = Cols(x);
    auto aux = saved.aux.find(i);
    switch (op.type()) {
      case SegmentOp::LINEAR: {
        SegmentParam& w = params_.at(op.weight());
        const int64_t out = w.shape[0], in = w.shape[1];
        if (w.trainable) {
          AddWeightGrad(node_, cost, g.data.data(), x.data.data(), rows, out, in, w.grad);
          if (!op.bias().empty()) {
            SegmentParam& b = params_.at(op.bias());
            if (b.grad.empty()) b.grad.assign(out, 0.0f);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t o = 0; o < out; ++o) b.grad[o] += g.data[r * out + o];
            }
            cost->Elementwise(node_, double(g.data.size()));
          }
        }
        HostTensor gx(x.shape);
        if (w.crossbars) {
          absl::StatusOr<ReramReport> read =
              w.crossbars->Transposed(g.data.data(), rows, gx.data.data());
          if (!read.ok()) return read.status();
          cost->Reram(*read, "backward:" + op.inputs(0));
        } else {
          Gemm(node_, g.data.data(), w.value.data(), rows, in, out, gx.data.data());
          GemmCost(node_, cost, rows, in, out);
        }
        accumulate(op.inputs(0), std::move(gx));
        break;
      }
      case SegmentOp::LORA: {
        SegmentParam& a = params_.at(op.weight());
        SegmentParam& b = params_.at(op.weight_b());
        const int64_t rank = a.shape[0], in = a.shape[1], out = b.shape[0];
        const std::vector<float>& h = aux->second;
        const float scale = static_cast<float>(op.scale());
        for (float& v : g.data) v *= scale;
        cost->Elementwise(node_, double(g.data.size()));
        std::vector<float> gh(rows * rank);
        Gemm(node_, g.data.data(), b.value.data(), rows, rank, out, gh.data());
        GemmCost(node_, cost, rows, rank, out);
        if (op.trainable()) {
          AddWeightGrad(node_, cost, g.data.data(), h.data(), rows, out, rank, b.grad);
          AddWeightGrad(node_, cost, gh.data(), x.data.data(), rows, rank, in, a.grad);
        }
        HostTensor gx(x.shape);
        Gemm(node_, gh.data(), a.value.data(), rows, in, rank, gx.data.data());
        GemmCost(node_, cost, rows, in, rank);
        accumulate(op.inputs(0), std::move(gx));
        break;
      }
      case SegmentOp::ADD:
        for (int j = 1; j < op.inputs_size(); ++j) accumulate(op.inputs(j), g);
        accumulate(op.inputs(0), std::move(g));
        break;
      case SegmentOp::ADD_CONST:
        accumulate(op.inputs(0), std::move(g));
        break;
      case SegmentOp::RELU:
        graph_kernels::ReluBackward(g.data.data(), x.data.data(), g.num_elements());
        cost->Elementwise(node_, double(g.data.size()));
        accumulate(op.inputs(0), std::move(g));
        break;
      case SegmentOp::DROPOUT:
        if (op.dropout() > 0) {  // the training forward dropped out
          ApplyDropout(g.data.data(), g.data.data(), g.num_elements(), op.dropout(),
                       MixSeed(saved.mask_seed, i));
          cost->Elementwise(node_, double(g.data.size()));
        }
        accumulate(op.inputs(0), std::move(g));
        break;
      case SegmentOp::LAYER_NORM: {
        SegmentParam& gamma = params_.at(op.weight());
        SegmentParam& beta = params_.at(op.bias());
        const std::vector<float>& stats = aux->second;  // mean, 1/sigma per row
        HostTensor gx(x.shape);
        // Each chunk of rows sums its own gamma and beta gradients; the
        // chunks are added in order, so the result does not depend on timing.
        const int64_t grain = RowGrain(cols);
        const int64_t chunks = (rows + grain - 1) / grain;
        std::vector<float> partial(gamma.trainable ? 2 * chunks * cols : 0);
        ParallelFor(chunks, 1, [&](int64_t first_chunk, int64_t end_chunk) {
          std::vector<float> xhat(cols), gy(cols);
          for (int64_t r = first_chunk * grain; r < std::min(rows, end_chunk * grain); ++r) {
            const float* gr = g.data.data() + r * cols;
            graph_kernels::LayerNormBackwardRow(gr, gamma.value.data(),
                                                x.data.data() + r * cols, stats[2 * r],
                                                stats[2 * r + 1], cols, xhat.data(),
                                                gy.data(), gx.data.data() + r * cols);
            if (gamma.trainable) {
              float* pg = partial.data() + 2 * (r / grain) * cols;
              float* pb = pg + cols;
              for (int64_t c = 0; c < cols; ++c) {
                pg[c] += gr[c] * xhat[c];
                pb[c] += gr[c];
              }
            }
          }
        });
        if (gamma.trainable) {
          if (gamma.grad.empty()) gamma.grad.assign(cols, 0.0f);
          if (beta.grad.empty()) beta.grad.assign(cols, 0.0f);
          for (int64_t ch = 0; ch < chunks; ++ch) {
            graph_kernels::AddInPlace(gamma.grad.data(), partial.data() + 2 * ch * cols, cols);
            graph_kernels::AddInPlace(beta.grad.data(), partial.data() + (2 * ch + 1) * cols,
                                      cols);
          }
        }
        cost->Elementwise(node_, kLayerNormOps * double(g.data.size()));
        accumulate(op.inputs(0), std::move(gx));
        break;
      }
      case SegmentOp::ATTENTION: {
        const HostTensor& k = saved.values.at(op.inputs(1));
        const HostTensor& v = saved.values.at(op.inputs(2));
        const int64_t batch = x.shape[0], tokens = x.shape[1], heads = op.num_heads();
        const int64_t hd = cols / heads, tt = tokens * tokens;
        const float inv_sqrt = float(1.0 / std::sqrt(double(hd)));
        const std::vector<float>& probs = aux->second;
        const bool drop = op.dropout() > 0;
        const uint64_t seed = MixSeed(saved.mask_seed, i);
        HostTensor gq(x.shape), gk(x.shape), gv(x.shape);
        // As in the forward, each head's blocks are read and written in
        // place with BLAS leading dimensions, the [tokens, tokens] matrices
        // read transposed by the products, and operands rounded as the node
        // takes them (whole tensors once, per-head matrices as they are
        // made). Pairs split over the threads.
        std::vector<float> qs, ks, vs, gs;
        const float* qd = Operand(node_, x.data.data(), x.num_elements(), &qs);
        const float* kd = Operand(node_, k.data.data(), k.num_elements(), &ks);
        const float* vd = Operand(node_, v.data.data(), v.num_elements(), &vs);
        const float* gd = Operand(node_, g.data.data(), g.num_elements(), &gs);
        const int64_t pair_grain = PairGrain(batch * heads, tokens, hd);
        ParallelFor(batch * heads, pair_grain, [&](int64_t begin, int64_t end) {
          std::vector<float> gp(tt), used(drop ? tt : 0), os;
          for (int64_t pair = begin; pair < end; ++pair) {
            const int64_t b = pair / heads, h = pair % heads;
            const int64_t offset = b * tokens * cols + h * hd;
            const float* p = probs.data() + pair * tt;
            const float* pm = p;  // P' = P * mask
            if (drop) {
              ApplyDropout(p, used.data(), tt, op.dropout(), seed, pair * tt,
                           /*parallel=*/false);
              pm = used.data();
            }
            // dV = P'^T dO; dP' = dO V^T.
            SgemmAt(tokens, hd, tokens, 1.0f, Operand(node_, pm, tt, &os), tokens,
                    gd + offset, cols, 0.0f, gv.data.data() + offset, cols);
            SgemmBt(tokens, tokens, hd, 1.0f, gd + offset, cols, vd + offset, cols, 0.0f,
                    gp.data(), tokens);
            // dP = dP' * mask; dS = P (dP - rowsum(dP P)) / sqrt(hd).
            if (drop) {
              ApplyDropout(gp.data(), gp.data(), tt, op.dropout(), seed, pair * tt,
                           /*parallel=*/false);
            }
            for (int64_t r = 0; r < tokens; ++r) {
              graph_kernels::SoftmaxBackwardRow(gp.data() + r * tokens, p + r * tokens,
                                                tokens, inv_sqrt);
            }
            // dQ = dS K; dK = dS^T Q.
            const float* ds = Operand(node_, gp.data(), tt, &os);
            Sgemm(tokens, hd, tokens, 1.0f, ds, tokens, kd + offset, cols, 0.0f,
                  gq.data.data() + offset, cols);
            SgemmAt(tokens, hd, tokens, 1.0f, ds, tokens, qd + offset, cols, 0.0f,
                    gk.data.data() + offset, cols);
          }
        });
        const double pairs = double(batch * heads);
        GemmCost(node_, cost, tokens, hd, tokens, 3 * pairs);   // dV, dQ, dK
        GemmCost(node_, cost, tokens, tokens, hd, pairs);       // dP'
        cost->Elementwise(node_, 6.0 * pairs * double(tt));
        accumulate(op.inputs(0), std::move(gq));
        accumulate(op.inputs(1), std::move(gk));
        accumulate(op.inputs(2), std::move(gv));
        break;
      }
      default:
        return absl::InternalError("unknown op type");
    }
  }
  std::map<std::string, HostTensor> result;
  for (const std::string& name : inputs_) {
    auto it = grads.find(name);
    result[name] = it != grads.end() ? std::move(it->second)
                                     : HostTensor(saved.values.at(name).shape);
  }
  return result;
}

absl::Status SegmentGraph::Reprogram(CostBuilder* cost) {
  for (auto& [name, p] : params_) {
    if (!p.trainable || !p.crossbars) continue;
    const std::vector<float> wt = Transpose(p.value.data(), p.shape[0], p.shape[1]);
    absl::StatusOr<ReramReport> programmed = p.crossbars->Program(wt.data());
    if (!programmed.ok()) return programmed.status();
    cost->Reram(*programmed);
  }
  return absl::OkStatus();
}

}  // namespace hpt
