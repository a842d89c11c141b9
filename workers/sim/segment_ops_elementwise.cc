// The element-wise segment ops (segment_ops.h): ADD, ADD_CONST, RELU,
// DROPOUT, LAYER_NORM and CONCAT, on the node's vector unit. Each result starts
// as its first input (that buffer itself in an inference forward when no
// later op reads it).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/cpu_kernels.h"
#include "workers/sim/segment_ops.h"

namespace hpt {
namespace {

// LayerNorm: mean, variance, normalise, scale, shift.
constexpr double kLayerNormOps = 8;

absl::StatusOr<HostTensor> ForwardAdd(OpForward& f) {
  const SegmentOp& op = f.op;
  for (int j = 1; j < op.inputs_size(); ++j) {
    const HostTensor& other = f.values.at(op.inputs(j));
    if (other.shape != f.x.shape) {
      return absl::InvalidArgumentError(absl::StrCat(f.where, "adding '", op.inputs(j), "' ",
                                                     other.ShapeString(), " to '", op.inputs(0),
                                                     "' ", f.x.ShapeString()));
    }
  }
  HostTensor y = f.InputCopy();
  for (int j = 1; j < op.inputs_size(); ++j) {
    const HostTensor& other = f.values.at(op.inputs(j));
    AddInPlace(y.data.data(), other.data.data(), y.num_elements());
  }
  f.cost->Elementwise(double(y.data.size()) * (op.inputs_size() - 1));
  return y;
}

absl::Status BackwardAdd(OpBackward& b) {
  for (int j = 1; j < b.op.inputs_size(); ++j) b.accumulate(b.op.inputs(j), b.g);
  b.accumulate(b.op.inputs(0), std::move(b.g));
  return absl::OkStatus();
}

// Inputs side by side along the last dimension; each must agree with the
// first in every other dimension.
absl::StatusOr<HostTensor> ForwardConcat(OpForward& f) {
  const SegmentOp& op = f.op;
  std::vector<const HostTensor*> parts;
  int64_t cols = 0;
  for (int j = 0; j < op.inputs_size(); ++j) {
    const HostTensor& part = j == 0 ? f.x : f.values.at(op.inputs(j));
    if (part.shape.empty() || part.shape.size() != f.x.shape.size() ||
        !std::equal(part.shape.begin(), part.shape.end() - 1, f.x.shape.begin())) {
      return absl::InvalidArgumentError(absl::StrCat(
          f.where, "concatenating '", op.inputs(j), "' ", part.ShapeString(), " beside '",
          op.inputs(0), "' ", f.x.ShapeString(), ": all but the last dimension must agree"));
    }
    parts.push_back(&part);
    cols += Cols(part);
  }
  HostTensor y = WithLastDim(f.x, cols);
  const int64_t rows = Rows(f.x);
  for (int64_t r = 0; r < rows; ++r) {
    float* out = y.data.data() + r * cols;
    for (const HostTensor* part : parts) {
      const int64_t c = Cols(*part);
      std::copy_n(part->data.data() + r * c, c, out);
      out += c;
    }
  }
  // A copy: one vector-unit pass over the result.
  f.cost->Elementwise(double(y.data.size()));
  return y;
}

// Each input gets its columns of the gradient.
absl::Status BackwardConcat(OpBackward& b) {
  const int64_t cols = Cols(b.g), rows = Rows(b.g);
  int64_t first = 0;
  for (int j = 0; j < b.op.inputs_size(); ++j) {
    const HostTensor& part = b.values.at(b.op.inputs(j));
    const int64_t c = Cols(part);
    HostTensor g(part.shape);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(b.g.data.data() + r * cols + first, c, g.data.data() + r * c);
    }
    first += c;
    b.accumulate(b.op.inputs(j), std::move(g));
  }
  b.cost->Elementwise(double(b.g.data.size()));
  return absl::OkStatus();
}

absl::Status LoadAddConst(OpLoad& l) {
  auto it = l.sent.find(l.op.weight());
  if (it == l.sent.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(l.where, ": constant '", l.op.weight(), "' was not sent"));
  }
  return l.take(l.op.weight(), false, it->second.shape.size()).status();
}

absl::StatusOr<HostTensor> ForwardAddConst(OpForward& f) {
  const SegmentOp& op = f.op;
  const SegmentParam& c = f.params.at(op.weight());
  const size_t n = c.shape.size();
  if (f.x.shape.size() < n || !std::equal(c.shape.begin(), c.shape.end(), f.x.shape.end() - n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        f.where, "'", op.inputs(0), "' ", f.x.ShapeString(), " does not end with the shape of '",
        op.weight(), "' [", absl::StrJoin(c.shape, ", "), "]"));
  }
  HostTensor y = f.InputCopy();
  const size_t period = c.value.size();
  for (size_t e0 = 0; e0 < y.data.size(); e0 += period) {
    float* row = y.data.data() + e0;
    for (size_t e = 0; e < period; ++e) row[e] += c.value[e];
  }
  f.cost->Elementwise(double(y.data.size()));
  return y;
}

// The gradient passes through unchanged.
absl::Status BackwardIdentity(OpBackward& b) {
  b.accumulate(b.op.inputs(0), std::move(b.g));
  return absl::OkStatus();
}

absl::StatusOr<HostTensor> ForwardRelu(OpForward& f) {
  HostTensor y = f.InputCopy();
  Relu(y.data.data(), y.num_elements());
  f.cost->Elementwise(double(y.data.size()));
  return y;
}

absl::Status BackwardRelu(OpBackward& b) {
  ReluBackward(b.g.data.data(), b.x.data.data(), b.g.num_elements());
  b.cost->Elementwise(double(b.g.data.size()));
  return BackwardIdentity(b);
}

absl::Status LoadDropout(OpLoad& l) {
  if (l.op.dropout() < 0 || l.op.dropout() >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(l.where, ": dropout must be in [0, 1), got ", l.op.dropout()));
  }
  return absl::OkStatus();
}

absl::StatusOr<HostTensor> ForwardDropout(OpForward& f) {
  HostTensor y = f.InputCopy();
  if (f.train() && f.op.dropout() > 0) {
    // The mask is a function of (seed, element): made on the fly here and
    // again in the backward, never stored.
    ApplyDropout(y.data.data(), y.data.data(), y.num_elements(), f.op.dropout(),
                 MixSeed(f.mask_seed, f.index));
    f.cost->Elementwise(2.0 * double(y.data.size()));
  }
  return y;
}

absl::Status BackwardDropout(OpBackward& b) {
  if (b.op.dropout() > 0) {  // the training forward dropped out
    ApplyDropout(b.g.data.data(), b.g.data.data(), b.g.num_elements(), b.op.dropout(),
                 MixSeed(b.mask_seed, b.index));
    b.cost->Elementwise(double(b.g.data.size()));
  }
  return BackwardIdentity(b);
}

absl::Status LoadLayerNorm(OpLoad& l) {
  absl::StatusOr<SegmentParam*> g = l.take(l.op.weight(), l.op.trainable(), 1);
  if (!g.ok()) return g.status();
  absl::StatusOr<SegmentParam*> b = l.take(l.op.bias(), l.op.trainable(), 1);
  if (!b.ok()) return b.status();
  if ((*b)->shape != (*g)->shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(l.where, ": LayerNorm weight and bias differ in shape"));
  }
  return absl::OkStatus();
}

absl::StatusOr<HostTensor> ForwardLayerNorm(OpForward& f) {
  const SegmentOp& op = f.op;
  const int64_t rows = Rows(f.x), cols = Cols(f.x);
  const std::vector<float>& gamma = f.params.at(op.weight()).value;
  const std::vector<float>& beta = f.params.at(op.bias()).value;
  if (cols != int64_t(gamma.size())) {
    return absl::InvalidArgumentError(absl::StrCat(f.where, "'", op.inputs(0), "' ",
                                                   f.x.ShapeString(), " but LayerNorm '",
                                                   op.weight(), "' normalises ", gamma.size()));
  }
  const double eps = op.eps() > 0 ? op.eps() : 1e-5;
  // In place on y (row by row: a row's statistics are taken before it is
  // overwritten). Training keeps each row's mean and 1/sigma; the backward
  // rebuilds x-hat from the saved input.
  HostTensor y = f.InputCopy();
  const bool train = f.train();
  std::vector<float> aux(train ? 2 * rows : 0);
  ParallelFor(rows, RowGrain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const auto [mean, rstd] =
          LayerNormRow(y.data.data() + r * cols, gamma.data(), beta.data(), cols, eps);
      if (train) {
        aux[2 * r] = mean;
        aux[2 * r + 1] = rstd;
      }
    }
  });
  f.cost->Elementwise(kLayerNormOps * double(y.data.size()));
  if (train) *f.aux = std::move(aux);
  return y;
}

absl::Status BackwardLayerNorm(OpBackward& b) {
  const HostTensor& x = b.x;
  const HostTensor& g = b.g;
  const int64_t rows = Rows(x), cols = Cols(x);
  SegmentParam& gamma = b.params.at(b.op.weight());
  SegmentParam& beta = b.params.at(b.op.bias());
  const std::vector<float>& stats = *b.aux;  // mean, 1/sigma per row
  HostTensor gx(x.shape);
  // Each chunk of rows sums its own gamma and beta gradients; the chunks
  // are added in order, so the result does not depend on timing.
  const int64_t grain = RowGrain(cols);
  const int64_t chunks = (rows + grain - 1) / grain;
  std::vector<float> partial(gamma.trainable ? 2 * chunks * cols : 0);
  ParallelFor(chunks, 1, [&](int64_t first_chunk, int64_t end_chunk) {
    std::vector<float> xhat(cols), gy(cols);
    for (int64_t r = first_chunk * grain; r < std::min(rows, end_chunk * grain); ++r) {
      const float* gr = g.data.data() + r * cols;
      LayerNormBackwardRow(gr, gamma.value.data(), x.data.data() + r * cols, stats[2 * r],
                           stats[2 * r + 1], cols, xhat.data(), gy.data(),
                           gx.data.data() + r * cols);
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
      AddInPlace(gamma.grad.data(), partial.data() + 2 * ch * cols, cols);
      AddInPlace(beta.grad.data(), partial.data() + (2 * ch + 1) * cols, cols);
    }
  }
  b.cost->Elementwise(kLayerNormOps * double(g.data.size()));
  b.accumulate(b.op.inputs(0), std::move(gx));
  return absl::OkStatus();
}

}  // namespace

const SegmentOpKernel kAddOp = {NoLoad, ForwardAdd, BackwardAdd};
const SegmentOpKernel kAddConstOp = {LoadAddConst, ForwardAddConst, BackwardIdentity};
const SegmentOpKernel kReluOp = {NoLoad, ForwardRelu, BackwardRelu};
const SegmentOpKernel kDropoutOp = {LoadDropout, ForwardDropout, BackwardDropout};
const SegmentOpKernel kLayerNormOp = {LoadLayerNorm, ForwardLayerNorm, BackwardLayerNorm};
const SegmentOpKernel kConcatOp = {NoLoad, ForwardConcat, BackwardConcat};

}  // namespace hpt
