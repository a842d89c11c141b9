// ATTENTION (segment_ops.h): softmax(q k^T / sqrt(hd)) v per head, with
// optional dropout on the weights. Activation x activation products, so on
// the node's array, never in crossbars (they would need writes). Each
// (sample, head) pair runs attention_head.h, a block of query rows at a
// time.
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/host_memory.h"
#include "devices/cpu_kernels.h"
#include "workers/sim/attention_head.h"
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

// Whether a training forward keeps every head's weights for its backward
// (batch x heads x tokens^2 floats) or the backward makes them again: one
// more score product and softmax per head, and the same bits. Kept up to
// 256 MiB, and past that while they take at most half of what the machine
// has left, so that many stations cost time on the host, not the worker.
// The node's modelled cost is the same either way: it is the cost of the
// node's algorithm, which keeps them in its memory.
bool KeepWeights(int64_t batch, int64_t heads, int64_t tokens) {
  const double bytes = 4.0 * double(batch) * double(heads) * double(tokens) * double(tokens);
  if (bytes <= double(int64_t{256} << 20)) return true;
  const std::optional<double> available = AvailableMemoryBytes();
  return available.has_value() && bytes <= 0.5 * *available;
}

// The (sample, head) pairs of q, k, v [batch, tokens, heads x hd] as the
// node takes them (rounded once, kept here): pair p is sample p / heads,
// head p % heads, read in place (BLAS leading dimensions), no copies.
class Pairs {
 public:
  Pairs(const DeviceNode& node, const HostTensor& q, const HostTensor& k, const HostTensor& v,
        int64_t heads, double dropout, uint64_t seed)
      : node_(node),
        q_(NodeOperand(node, q.data.data(), q.num_elements(), &qs_)),
        k_(NodeOperand(node, k.data.data(), k.num_elements(), &ks_)),
        v_(NodeOperand(node, v.data.data(), v.num_elements(), &vs_)),
        heads_(heads),
        tokens_(q.shape[1]),
        hd_(Cols(q) / heads),
        dropout_(dropout),
        seed_(seed) {}
  Pairs(const Pairs&) = delete;
  Pairs& operator=(const Pairs&) = delete;

  double dropout() const { return dropout_; }
  // Where pair `pair`'s block starts in a [batch, tokens, heads x hd] tensor.
  int64_t Offset(int64_t pair) const {
    return (pair / heads_) * tokens_ * heads_ * hd_ + (pair % heads_) * hd_;
  }
  AttentionHead Head(int64_t pair) const {
    const int64_t o = Offset(pair);
    return AttentionHead{node_,
                         q_ + o,
                         k_ + o,
                         v_ + o,
                         tokens_,
                         hd_,
                         heads_ * hd_,
                         float(1.0 / std::sqrt(double(hd_))),
                         dropout_,
                         seed_,
                         pair * tokens_ * tokens_};
  }

 private:
  const DeviceNode& node_;
  std::vector<float> qs_, ks_, vs_;  // the rounded operands, where rounded
  const float *q_, *k_, *v_;
  int64_t heads_, tokens_, hd_;
  double dropout_;
  uint64_t seed_;
};

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

absl::StatusOr<HostTensor> ForwardAttention(OpForward& f) {
  const SegmentOp& op = f.op;
  const HostTensor& x = f.x;
  const int64_t cols = Cols(x);
  const HostTensor& k = f.values.at(op.inputs(1));
  const HostTensor& v = f.values.at(op.inputs(2));
  if (x.shape.size() != 3 || k.shape != x.shape || v.shape != x.shape ||
      cols % op.num_heads() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.where,
                     "attention needs q, k, v of one shape [batch, tokens, d] with d "
                     "divisible by ",
                     op.num_heads(), " heads; got ", x.ShapeString(), ", ", k.ShapeString(), ", ",
                     v.ShapeString()));
  }
  const bool train = f.train();
  const int64_t batch = x.shape[0], tokens = x.shape[1], heads = op.num_heads();
  const int64_t hd = cols / heads, tt = tokens * tokens;
  const bool keep = train && KeepWeights(batch, heads, tokens);
  std::vector<float> kept(keep ? batch * heads * tt : 0);
  HostTensor y(x.shape);
  const Pairs pairs(f.node, x, k, v, heads, train ? op.dropout() : 0.0,
                    MixSeed(f.mask_seed, f.index));
  const int64_t row_block = AttentionRowBlock(tokens);
  ParallelFor(batch * heads, PairGrain(batch * heads, tokens, hd), [&](int64_t begin, int64_t end) {
    AttentionScratch scratch;
    for (int64_t pair = begin; pair < end; ++pair) {
      HeadForward(pairs.Head(pair), row_block, keep ? kept.data() + pair * tt : nullptr,
                  y.data.data() + pairs.Offset(pair), scratch);
    }
  });
  const double n = double(batch * heads);
  f.cost->Gemm(tokens, tokens, hd, n);
  f.cost->Gemm(tokens, hd, tokens, n);
  f.cost->Elementwise((kSoftmaxOps + (pairs.dropout() > 0 ? 1 : 0)) * n * double(tt));
  // Empty when not kept: the backward makes them again.
  if (train) *f.aux = std::move(kept);
  return y;
}

absl::Status BackwardAttention(OpBackward& bw) {
  const SegmentOp& op = bw.op;
  const HostTensor& x = bw.x;
  const HostTensor& g = bw.g;
  const HostTensor& k = bw.values.at(op.inputs(1));
  const HostTensor& v = bw.values.at(op.inputs(2));
  const int64_t batch = x.shape[0], tokens = x.shape[1], heads = op.num_heads();
  const int64_t hd = Cols(x) / heads, tt = tokens * tokens;
  const float* kept = bw.aux != nullptr && !bw.aux->empty() ? bw.aux->data() : nullptr;
  HostTensor gq(x.shape), gk(x.shape), gv(x.shape);
  // As in the forward; the per-head matrices rounded as they are made.
  const Pairs pairs(bw.node, x, k, v, heads, op.dropout(), MixSeed(bw.mask_seed, bw.index));
  std::vector<float> gs;
  const float* gd = NodeOperand(bw.node, g.data.data(), g.num_elements(), &gs);
  const int64_t row_block = AttentionRowBlock(tokens);
  ParallelFor(batch * heads, PairGrain(batch * heads, tokens, hd), [&](int64_t begin, int64_t end) {
    AttentionScratch scratch;
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t o = pairs.Offset(pair);
      HeadBackward(pairs.Head(pair), row_block, kept != nullptr ? kept + pair * tt : nullptr,
                   gd + o, gq.data.data() + o, gk.data.data() + o, gv.data.data() + o, scratch);
    }
  });
  const double n = double(batch * heads);
  bw.cost->Gemm(tokens, hd, tokens, 3 * n);  // dV, dQ, dK
  bw.cost->Gemm(tokens, tokens, hd, n);      // dP'
  bw.cost->Elementwise(6.0 * n * double(tt));
  bw.accumulate(op.inputs(0), std::move(gq));
  bw.accumulate(op.inputs(1), std::move(gk));
  bw.accumulate(op.inputs(2), std::move(gv));
  return absl::OkStatus();
}

}  // namespace

const SegmentOpKernel kAttentionOp = {LoadAttention, ForwardAttention, BackwardAttention};

}  // namespace hpt
