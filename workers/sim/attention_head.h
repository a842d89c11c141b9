// One head of one sample's attention as a simulated node's products run it
// (segment_ops_attention.cc holds the op): softmax(q k^T * scale) v, with
// optional dropout on the weights, and its backward, a block of query rows
// at a time.
//
// Row blocks bound what a head needs of the host's memory to rows x tokens
// floats, however many tokens (stations) a sample has. A training forward
// may keep the head's weights (tokens^2 floats) for its backward, or keep
// nothing and let the backward make them again with the same calls, which
// gives the same bits.
//
//   AttentionHead h{node, q, k, v, tokens, hd, stride, scale, dropout, seed, first};
//   AttentionScratch scratch;  // one per thread
//   const int64_t rows = AttentionRowBlock(tokens);
//   HeadForward(h, rows, kept_or_null, y, scratch);
//   HeadBackward(h, rows, kept_or_null, gy, gq, gk, gv, scratch);
//
// Thread-safe for distinct heads with distinct scratch.
#ifndef HPT_WORKERS_SIM_ATTENTION_HEAD_H_
#define HPT_WORKERS_SIM_ATTENTION_HEAD_H_

#include <cstdint>
#include <vector>

#include "workers/sim/device_node.h"

namespace hpt {

// A head's operands: q, k, v are [tokens, hd] blocks with row stride
// `stride` (a head's columns inside a [tokens, d] sample), already in the
// node's operand format (NodeOperand).
struct AttentionHead {
  const DeviceNode& node;
  const float* q;
  const float* k;
  const float* v;
  int64_t tokens = 0;
  int64_t hd = 0;
  int64_t stride = 0;
  float scale = 1;     // 1 / sqrt(hd)
  double dropout = 0;  // on the weights; 0 in an inference forward
  uint64_t seed = 0;   // the dropout mask's (ApplyDropout)
  int64_t first = 0;   // the head's first element in that mask
};

// Per-thread buffers, grown as a head needs them.
struct AttentionScratch {
  std::vector<float> weights, dropped, grad, operand;
};

// Query rows per block for `tokens` tokens: all of them while a head's
// tokens^2 weights take at most 64 MiB (4,096 tokens), so every job under
// that runs whole-head products; past it, as many rows as fit in 64 MiB.
int64_t AttentionRowBlock(int64_t tokens);

// y (a [tokens, hd] block, row stride `stride`) = the head's attention.
// `kept` non-null: the weights (before dropout) are written there,
// [tokens, tokens], for HeadBackward.
void HeadForward(const AttentionHead& h, int64_t row_block, float* kept, float* y,
                 AttentionScratch& scratch);

// The head's input gradients gq, gk, gv (blocks like y, overwritten) from
// its output gradient gy (in the node's operand format). `kept`: what
// HeadForward kept, or null to make the weights again; the same
// `row_block` as the forward gives the same bits either way.
void HeadBackward(const AttentionHead& h, int64_t row_block, const float* kept, const float* gy,
                  float* gq, float* gk, float* gv, AttentionScratch& scratch);

}  // namespace hpt

#endif  // HPT_WORKERS_SIM_ATTENTION_HEAD_H_
