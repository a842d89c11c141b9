// ATTENTION (segment_ops.h): softmax(q k^T / sqrt(hd)) v per head, with
// optional dropout on the weights. Activation x activation products, so on
// the node's array, never in crossbars (they would need writes).
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/host_memory.h"
#include "devices/blas.h"
#include "devices/cpu_kernels.h"
#include "workers/sim/segment_ops.h"

namespace hpt {
namespace {

// Softmax: max, subtract, exp, sum, divide.
constexpr double kSoftmaxOps = 5;

// (Sample, head) pairs per parallel chunk of attention: 1 while a head's
// products are small enough that OpenBLAS runs them on the calling thread
// (under its threading threshold, 65,536 x 4 multiply-adds by default),
// else all of them, inline, so the products thread inside BLAS instead of
// BLAS threads starting under each of ours.
int64_t PairGrain(int64_t pairs, int64_t tokens, int64_t hd) {
  return tokens * tokens * hd < (int64_t{1} << 18) ? 1 : pairs + 1;
}

// A training forward keeps batch x heads x tokens^2 probabilities for its
// backward. Past what the machine has left, the allocation would end the
// worker (std::bad_alloc, or the kernel's OOM killer) and the job would
// see only a lost worker: refused instead, naming the sizes and the fix.
// Checked only past 256 MiB, where reading /proc/meminfo costs nothing
// beside the products.
absl::Status CheckAttentionMemory(const std::string& where, int64_t batch, int64_t heads,
                                  int64_t tokens) {
  const double bytes = 4.0 * double(batch) * double(heads) * double(tokens) * double(tokens);
  if (bytes < double(int64_t{256} << 20)) return absl::OkStatus();
  const std::optional<double> available = AvailableMemoryBytes();
  if (!available.has_value() || bytes <= 0.9 * *available) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s: attention over %d tokens keeps %.1f GB of weights for its backward (batch %d x %d "
      "heads x %d^2 floats) and this worker has %.1f GB left: lower training.batch_size, or "
      "give each sample fewer tokens (stations)",
      where, tokens, bytes / 1e9, batch, heads, tokens, *available / 1e9));
}

absl::Status LoadAttention(OpLoad& l) {
  if (l.op.inputs_size() != 3 || l.op.num_heads() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(l.where, ": ATTENTION takes inputs q, k, v and num_heads > 0"));
  }
  if (l.op.dropout() < 0 || l.op.dropout() >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(l.where, ": attention dropout must be in [0, 1), got ", l.op.dropout()));
  }
  return absl::OkStatus();
}

// Long because the per-head loop is one parallel body whose in-place
// operand strides are clearer kept together with the products they feed.
absl::StatusOr<HostTensor> ForwardAttention(OpForward& f) {
  const SegmentOp& op = f.op;
  const HostTensor& x = f.x;
  const int64_t cols = Cols(x);
  const HostTensor& k = f.values.at(op.inputs(1));
  const HostTensor& v = f.values.at(op.inputs(2));
  if (x.shape.size() != 3 || k.shape != x.shape || v.shape != x.shape ||
      cols % op.num_heads() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        f.where, "attention needs q, k, v of one shape [batch, tokens, d] with d "
        "divisible by ", op.num_heads(), " heads; got ", x.ShapeString(), ", ",
        k.ShapeString(), ", ", v.ShapeString()));
  }
  const bool train = f.train();
  const int64_t batch = x.shape[0], tokens = x.shape[1], heads = op.num_heads();
  const int64_t hd = cols / heads;
  const float inv_sqrt = float(1.0 / std::sqrt(double(hd)));
  const bool drop = train && op.dropout() > 0;
  const uint64_t seed = MixSeed(f.mask_seed, f.index);
  const int64_t tt = tokens * tokens;
  // Training keeps every head's probabilities for the backward (the
  // dropout mask is made again there); inference needs one scratch matrix
  // per thread.
  if (train) {
    if (absl::Status s = CheckAttentionMemory(f.where, batch, heads, tokens); !s.ok()) return s;
  }
  std::vector<float> probs(train ? batch * heads * tt : 0);
  HostTensor y(x.shape);
  // Each head's q, k, v and output are [tokens, hd] blocks with row stride
  // d inside the [batch, tokens, d] tensors: the products read and write
  // them in place (BLAS leading dimensions), no copies. The (sample, head)
  // pairs are independent: split over the threads.
  const DeviceNode& node = f.node;
  std::vector<float> qs, ks, vs;
  const float* qd = NodeOperand(node, x.data.data(), x.num_elements(), &qs);
  const float* kd = NodeOperand(node, k.data.data(), k.num_elements(), &ks);
  const float* vd = NodeOperand(node, v.data.data(), v.num_elements(), &vs);
  const int64_t pair_grain = PairGrain(batch * heads, tokens, hd);
  ParallelFor(batch * heads, pair_grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(train ? 0 : tt), weights(drop ? tt : 0), ws;
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t b = pair / heads, h = pair % heads;
      const int64_t offset = b * tokens * cols + h * hd;
      float* p = train ? probs.data() + pair * tt : scratch.data();
      SgemmBt(tokens, tokens, hd, 1.0f, qd + offset, cols, kd + offset, cols, 0.0f, p, tokens);
      for (int64_t r = 0; r < tokens; ++r) SoftmaxRow(p + r * tokens, tokens, inv_sqrt);
      const float* used = p;
      if (drop) {
        ApplyDropout(p, weights.data(), tt, op.dropout(), seed, pair * tt, /*parallel=*/false);
        used = weights.data();
      }
      used = NodeOperand(node, used, tt, &ws);
      Sgemm(tokens, hd, tokens, 1.0f, used, tokens, vd + offset, cols, 0.0f,
            y.data.data() + offset, cols);
    }
  });
  const double pairs = double(batch * heads);
  f.cost->Gemm(tokens, tokens, hd, pairs);
  f.cost->Gemm(tokens, hd, tokens, pairs);
  f.cost->Elementwise((kSoftmaxOps + (drop ? 1 : 0)) * pairs * double(tt));
  if (train) *f.aux = std::move(probs);
  return y;
}

// Long for the same reason as the forward.
absl::Status BackwardAttention(OpBackward& bw) {
  const SegmentOp& op = bw.op;
  const HostTensor& x = bw.x;
  const HostTensor& g = bw.g;
  const int64_t cols = Cols(x);
  const HostTensor& k = bw.values.at(op.inputs(1));
  const HostTensor& v = bw.values.at(op.inputs(2));
  const int64_t batch = x.shape[0], tokens = x.shape[1], heads = op.num_heads();
  const int64_t hd = cols / heads, tt = tokens * tokens;
  const float inv_sqrt = float(1.0 / std::sqrt(double(hd)));
  const std::vector<float>& probs = *bw.aux;
  const bool drop = op.dropout() > 0;
  const uint64_t seed = MixSeed(bw.mask_seed, bw.index);
  HostTensor gq(x.shape), gk(x.shape), gv(x.shape);
  // As in the forward, each head's blocks are read and written in place
  // with BLAS leading dimensions, the [tokens, tokens] matrices read
  // transposed by the products, and operands rounded as the node takes
  // them (whole tensors once, per-head matrices as they are made). Pairs
  // split over the threads.
  const DeviceNode& node = bw.node;
  std::vector<float> qs, ks, vs, gs;
  const float* qd = NodeOperand(node, x.data.data(), x.num_elements(), &qs);
  const float* kd = NodeOperand(node, k.data.data(), k.num_elements(), &ks);
  const float* vd = NodeOperand(node, v.data.data(), v.num_elements(), &vs);
  const float* gd = NodeOperand(node, g.data.data(), g.num_elements(), &gs);
  const int64_t pair_grain = PairGrain(batch * heads, tokens, hd);
  ParallelFor(batch * heads, pair_grain, [&](int64_t begin, int64_t end) {
    std::vector<float> gp(tt), used(drop ? tt : 0), os;
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t b = pair / heads, h = pair % heads;
      const int64_t offset = b * tokens * cols + h * hd;
      const float* p = probs.data() + pair * tt;
      const float* pm = p;  // P' = P * mask
      if (drop) {
        ApplyDropout(p, used.data(), tt, op.dropout(), seed, pair * tt, /*parallel=*/false);
        pm = used.data();
      }
      // dV = P'^T dO; dP' = dO V^T.
      SgemmAt(tokens, hd, tokens, 1.0f, NodeOperand(node, pm, tt, &os), tokens, gd + offset,
              cols, 0.0f, gv.data.data() + offset, cols);
      SgemmBt(tokens, tokens, hd, 1.0f, gd + offset, cols, vd + offset, cols, 0.0f, gp.data(),
              tokens);
      // dP = dP' * mask; dS = P (dP - rowsum(dP P)) / sqrt(hd).
      if (drop) {
        ApplyDropout(gp.data(), gp.data(), tt, op.dropout(), seed, pair * tt,
                     /*parallel=*/false);
      }
      for (int64_t r = 0; r < tokens; ++r) {
        SoftmaxBackwardRow(gp.data() + r * tokens, p + r * tokens, tokens, inv_sqrt);
      }
      // dQ = dS K; dK = dS^T Q.
      const float* ds = NodeOperand(node, gp.data(), tt, &os);
      Sgemm(tokens, hd, tokens, 1.0f, ds, tokens, kd + offset, cols, 0.0f,
            gq.data.data() + offset, cols);
      SgemmAt(tokens, hd, tokens, 1.0f, ds, tokens, qd + offset, cols, 0.0f,
              gk.data.data() + offset, cols);
    }
  });
  const double pairs = double(batch * heads);
  bw.cost->Gemm(tokens, hd, tokens, 3 * pairs);  // dV, dQ, dK
  bw.cost->Gemm(tokens, tokens, hd, pairs);      // dP'
  bw.cost->Elementwise(6.0 * pairs * double(tt));
  bw.accumulate(op.inputs(0), std::move(gq));
  bw.accumulate(op.inputs(1), std::move(gk));
  bw.accumulate(op.inputs(2), std::move(gv));
  return absl::OkStatus();
}

}  // namespace

const SegmentOpKernel kAttentionOp = {LoadAttention, ForwardAttention, BackwardAttention};

}  // namespace hpt
