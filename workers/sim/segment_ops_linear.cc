// LINEAR and LORA (segment_ops.h). On a ReRAM node a LINEAR weight lives
// in crossbars, programmed at load (every cell write counted): the forward
// is a crossbar read x W^T, the input gradient a transposed read g W.
// Everything else is a product with the node's numerics.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "workers/sim/segment_ops.h"

namespace hpt {
namespace {

absl::Status LoadLinear(OpLoad& l) {
  const SegmentOp& op = l.op;
  absl::StatusOr<SegmentParam*> w = l.take(op.weight(), op.trainable(), 2);
  if (!w.ok()) return w.status();
  const int64_t out = (*w)->shape[0], in = (*w)->shape[1];
  if (!op.bias().empty()) {
    absl::StatusOr<SegmentParam*> b = l.take(op.bias(), op.trainable(), 1);
    if (!b.ok()) return b.status();
    if ((*b)->shape[0] != out) {
      return absl::InvalidArgumentError(
          absl::StrCat(l.where, ": bias '", op.bias(), "' must be [", out, "]"));
    }
  }
  if (!l.node.is_reram()) return absl::OkStatus();
  absl::StatusOr<ReramLayer> layer = ReramLayer::Create(l.node.reram, in, out);
  if (!layer.ok()) return layer.status();
  (*w)->crossbars = std::make_unique<ReramLayer>(std::move(*layer));
  if (op.duplication() > 1) {
    absl::Status copies = (*w)->crossbars->SetDuplication(op.duplication());
    if (!copies.ok()) return copies;
  }
  const std::vector<float> wt = Transpose((*w)->value.data(), out, in);
  absl::StatusOr<ReramReport> programmed = (*w)->crossbars->Program(wt.data());
  if (!programmed.ok()) return programmed.status();
  l.cost->ReramProgram(op.weight(), *(*w)->crossbars, *programmed);
  return absl::OkStatus();
}

absl::StatusOr<HostTensor> ForwardLinear(OpForward& f) {
  const SegmentOp& op = f.op;
  const HostTensor& x = f.x;
  const int64_t rows = Rows(x), cols = Cols(x);
  SegmentParam& w = f.params.at(op.weight());
  const int64_t out = w.shape[0], in = w.shape[1];
  if (cols != in) {
    return absl::InvalidArgumentError(absl::StrCat(f.where, "'", op.inputs(0), "' has shape ",
                                                   x.ShapeString(), " but '", op.weight(),
                                                   "' takes ", in, " inputs"));
  }
  HostTensor y = WithLastDim(x, out);
  if (w.crossbars) {
    absl::StatusOr<ReramReport> read = w.crossbars->Forward(x.data.data(), rows, y.data.data());
    if (!read.ok()) return read.status();
    f.cost->ReramRead(op.weight(), *w.crossbars, rows, /*transposed=*/false,
                      "forward:" + op.inputs(0));
  } else {
    NodeGemmBt(f.node, x.data.data(), w.value.data(), rows, out, in, y.data.data());
    f.cost->Gemm(rows, out, in);
  }
  if (!op.bias().empty()) {
    const std::vector<float>& b = f.params.at(op.bias()).value;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < out; ++o) y.data[r * out + o] += b[o];
    }
    f.cost->Elementwise(double(y.data.size()));
  }
  return y;
}

absl::Status BackwardLinear(OpBackward& b) {
  const SegmentOp& op = b.op;
  const HostTensor& x = b.x;
  const HostTensor& g = b.g;
  const int64_t rows = Rows(x);
  SegmentParam& w = b.params.at(op.weight());
  const int64_t out = w.shape[0], in = w.shape[1];
  if (w.trainable) {
    NodeAddWeightGrad(b.node, b.cost, g.data.data(), x.data.data(), rows, out, in, w.grad);
    if (!op.bias().empty()) {
      SegmentParam& bias = b.params.at(op.bias());
      if (bias.grad.empty()) bias.grad.assign(out, 0.0f);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t o = 0; o < out; ++o) bias.grad[o] += g.data[r * out + o];
      }
      b.cost->Elementwise(double(g.data.size()));
    }
  }
  HostTensor gx(x.shape);
  if (w.crossbars) {
    absl::StatusOr<ReramReport> read =
        w.crossbars->Transposed(g.data.data(), rows, gx.data.data());
    if (!read.ok()) return read.status();
    b.cost->ReramRead(op.weight(), *w.crossbars, rows, /*transposed=*/true,
                      "backward:" + op.inputs(0));
  } else {
    NodeGemm(b.node, g.data.data(), w.value.data(), rows, in, out, gx.data.data());
    b.cost->Gemm(rows, in, out);
  }
  b.accumulate(op.inputs(0), std::move(gx));
  return absl::OkStatus();
}

absl::Status LoadLora(OpLoad& l) {
  const SegmentOp& op = l.op;
  absl::StatusOr<SegmentParam*> a = l.take(op.weight(), op.trainable(), 2);
  if (!a.ok()) return a.status();
  absl::StatusOr<SegmentParam*> b = l.take(op.weight_b(), op.trainable(), 2);
  if (!b.ok()) return b.status();
  if ((*b)->shape[1] != (*a)->shape[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        l.where, ": LoRA B '", op.weight_b(), "' is [", absl::StrJoin((*b)->shape, ", "),
        "] but A '", op.weight(), "' has rank ", (*a)->shape[0]));
  }
  return absl::OkStatus();
}

// y = scale * (x A^T) B^T; training keeps h = x A^T.
absl::StatusOr<HostTensor> ForwardLora(OpForward& f) {
  const SegmentOp& op = f.op;
  const HostTensor& x = f.x;
  const int64_t rows = Rows(x), cols = Cols(x);
  const SegmentParam& a = f.params.at(op.weight());
  const SegmentParam& b = f.params.at(op.weight_b());
  const int64_t rank = a.shape[0], in = a.shape[1], out = b.shape[0];
  if (cols != in) {
    return absl::InvalidArgumentError(absl::StrCat(f.where, "'", op.inputs(0), "' has shape ",
                                                   x.ShapeString(), " but adapter '",
                                                   op.weight(), "' takes ", in));
  }
  std::vector<float> h(rows * rank);
  NodeGemmBt(f.node, x.data.data(), a.value.data(), rows, rank, in, h.data());
  f.cost->Gemm(rows, rank, in);
  HostTensor y = WithLastDim(x, out);
  NodeGemmBt(f.node, h.data(), b.value.data(), rows, out, rank, y.data.data());
  f.cost->Gemm(rows, out, rank);
  const float scale = static_cast<float>(op.scale());
  for (float& v : y.data) v *= scale;
  f.cost->Elementwise(double(y.data.size()));
  if (f.train()) *f.aux = std::move(h);
  return y;
}

absl::Status BackwardLora(OpBackward& bw) {
  const SegmentOp& op = bw.op;
  const HostTensor& x = bw.x;
  HostTensor& g = bw.g;
  const int64_t rows = Rows(x);
  SegmentParam& a = bw.params.at(op.weight());
  SegmentParam& b = bw.params.at(op.weight_b());
  const int64_t rank = a.shape[0], in = a.shape[1], out = b.shape[0];
  const std::vector<float>& h = *bw.aux;
  const float scale = static_cast<float>(op.scale());
  for (float& v : g.data) v *= scale;
  bw.cost->Elementwise(double(g.data.size()));
  std::vector<float> gh(rows * rank);
  NodeGemm(bw.node, g.data.data(), b.value.data(), rows, rank, out, gh.data());
  bw.cost->Gemm(rows, rank, out);
  if (op.trainable()) {
    NodeAddWeightGrad(bw.node, bw.cost, g.data.data(), h.data(), rows, out, rank, b.grad);
    NodeAddWeightGrad(bw.node, bw.cost, gh.data(), x.data.data(), rows, rank, in, a.grad);
  }
  HostTensor gx(x.shape);
  NodeGemm(bw.node, gh.data(), a.value.data(), rows, in, rank, gx.data.data());
  bw.cost->Gemm(rows, in, rank);
  bw.accumulate(op.inputs(0), std::move(gx));
  return absl::OkStatus();
}

}  // namespace

const SegmentOpKernel kLinearOp = {LoadLinear, ForwardLinear, BackwardLinear};
const SegmentOpKernel kLoraOp = {LoadLora, ForwardLora, BackwardLora};

}  // namespace hpt
