#include "workers/sim/segment_ops.h"

#include <algorithm>

namespace hpt {

const SegmentOpKernel* FindSegmentOp(SegmentOp::Type type) {
  switch (type) {
    case SegmentOp::LINEAR: return &kLinearOp;
    case SegmentOp::LORA: return &kLoraOp;
    case SegmentOp::ATTENTION: return &kAttentionOp;
    case SegmentOp::ADD: return &kAddOp;
    case SegmentOp::ADD_CONST: return &kAddConstOp;
    case SegmentOp::RELU: return &kReluOp;
    case SegmentOp::DROPOUT: return &kDropoutOp;
    case SegmentOp::LAYER_NORM: return &kLayerNormOp;
    case SegmentOp::CONCAT:
      return &kConcatOp;
    default: return nullptr;
  }
}

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

uint64_t MixSeed(uint64_t seed, int op) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * uint64_t(op + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t RowGrain(int64_t cols) {
  return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, cols));
}

absl::Status NoLoad(OpLoad&) { return absl::OkStatus(); }

}  // namespace hpt
