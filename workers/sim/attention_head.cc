#include "workers/sim/attention_head.h"

#include <algorithm>

#include "devices/blas.h"
#include "devices/cpu_kernels.h"

namespace hpt {
namespace {

// 64 MiB of floats: a block of a head's weights.
constexpr int64_t kBlockFloats = int64_t{16} << 20;

float* Sized(std::vector<float>& buffer, int64_t n) {
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(n);
  return buffer.data();
}

// Rows [r0, r0 + rows) of the weights into p (row stride tokens): the
// scores' product, then a softmax per row.
void Weights(const AttentionHead& h, int64_t r0, int64_t rows, float* p) {
  SgemmBt(rows, h.tokens, h.hd, 1.0f, h.q + r0 * h.stride, h.stride, h.k, h.stride, 0.0f, p,
          h.tokens);
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow(p + r * h.tokens, h.tokens, h.scale);
}

}  // namespace

int64_t AttentionRowBlock(int64_t tokens) {
  if (tokens <= 0 || tokens * tokens <= kBlockFloats) return std::max<int64_t>(tokens, 1);
  return std::max<int64_t>(1, kBlockFloats / tokens);
}

void HeadForward(const AttentionHead& h, int64_t row_block, float* kept, float* y,
                 AttentionScratch& scratch) {
  const int64_t t = h.tokens;
  for (int64_t r0 = 0; r0 < t; r0 += row_block) {
    const int64_t rows = std::min(row_block, t - r0), n = rows * t;
    float* p = kept != nullptr ? kept + r0 * t : Sized(scratch.weights, n);
    Weights(h, r0, rows, p);
    const float* used = p;
    if (h.dropout > 0) {
      float* dropped = Sized(scratch.dropped, n);
      ApplyDropout(p, dropped, n, h.dropout, h.seed, h.first + r0 * t, /*parallel=*/false);
      used = dropped;
    }
    used = NodeOperand(h.node, used, n, &scratch.operand);
    Sgemm(rows, h.hd, t, 1.0f, used, t, h.v, h.stride, 0.0f, y + r0 * h.stride, h.stride);
  }
}

void HeadBackward(const AttentionHead& h, int64_t row_block, const float* kept, const float* gy,
                  float* gq, float* gk, float* gv, AttentionScratch& scratch) {
  const int64_t t = h.tokens;
  for (int64_t r0 = 0; r0 < t; r0 += row_block) {
    const int64_t rows = std::min(row_block, t - r0), n = rows * t;
    const float* p = kept != nullptr ? kept + r0 * t : nullptr;
    if (p == nullptr) {
      float* made = Sized(scratch.weights, n);
      Weights(h, r0, rows, made);
      p = made;
    }
    const float* pm = p;  // P' = P * mask
    if (h.dropout > 0) {
      float* dropped = Sized(scratch.dropped, n);
      ApplyDropout(p, dropped, n, h.dropout, h.seed, h.first + r0 * t, /*parallel=*/false);
      pm = dropped;
    }
    // The blocks' shares of dV and dK add up: the first block writes them.
    const float beta = r0 == 0 ? 0.0f : 1.0f;
    const float* gy_rows = gy + r0 * h.stride;
    // dV += P'^T dO; dP' = dO V^T.
    SgemmAt(t, h.hd, rows, 1.0f, NodeOperand(h.node, pm, n, &scratch.operand), t, gy_rows, h.stride,
            beta, gv, h.stride);
    float* gp = Sized(scratch.grad, n);
    SgemmBt(rows, t, h.hd, 1.0f, gy_rows, h.stride, h.v, h.stride, 0.0f, gp, t);
    // dP = dP' * mask; dS = P (dP - rowsum(dP P)) * scale.
    if (h.dropout > 0) {
      ApplyDropout(gp, gp, n, h.dropout, h.seed, h.first + r0 * t, /*parallel=*/false);
    }
    for (int64_t r = 0; r < rows; ++r) SoftmaxBackwardRow(gp + r * t, p + r * t, t, h.scale);
    // dQ = dS K; dK += dS^T Q.
    const float* ds = NodeOperand(h.node, gp, n, &scratch.operand);
    Sgemm(rows, h.hd, t, 1.0f, ds, t, h.k, h.stride, 0.0f, gq + r0 * h.stride, h.stride);
    SgemmAt(t, h.hd, rows, 1.0f, ds, t, h.q + r0 * h.stride, h.stride, beta, gk, h.stride);
  }
}

}  // namespace hpt
