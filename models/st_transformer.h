// The spatio-temporal encoder transformer in LibTorch (docs/method.md, "The model"):
// input MLP embedding -> sinusoidal token encoding -> L post-norm encoder
// layers (multi-head self-attention with named q/k/v/o projections,
// feed-forward, LayerNorm, dropout) -> dimension-reduction MLP (reading the
// input embedding beside the last layer under embedding_skip) -> per-token
// regression head. Attention runs across all tokens of a sample.
//
// Input [batch, tokens, input_features]; output [batch, tokens,
// output_features]. Including this header pulls in LibTorch: include it only
// from the .cc files that run the model.
#ifndef HPT_MODELS_ST_TRANSFORMER_H_
#define HPT_MODELS_ST_TRANSFORMER_H_

#include <torch/torch.h>

#include <map>
#include <string>

#include "proto/common.pb.h"

namespace hpt {

// Inverted dropout with probability `p` while `training`. CUDA tensors use
// LibTorch's fused kernel; CPU tensors a counter-based mask (element e is
// dropped when a hash of (e, a seed drawn once per call from LibTorch's CPU
// generator) falls under p * 2^32), filled by vectorised passes over the
// intra-op threads. LibTorch's CPU bernoulli draws one number at a time
// from a locked generator: measured here, 10 % of a wind training step and
// more of a LoRA step, whose adapters add four dropouts a layer. Seeded by
// torch::manual_seed like LibTorch's own, so replays draw the same masks.
torch::Tensor Dropout(const torch::Tensor& x, double p, bool training);

// A low-rank adapter: x -> B(A(dropout(x))) * alpha / rank, with B = 0 at
// creation (models/lora.h).
class LoraAdapterImpl : public torch::nn::Module {
 public:
  LoraAdapterImpl(int64_t in, int64_t out, int64_t rank, double alpha,
                  double dropout);
  torch::Tensor forward(const torch::Tensor& x);
  // B A * alpha / rank, shaped like the base weight [out, in].
  torch::Tensor Delta() const;

  torch::nn::Linear A{nullptr}, B{nullptr};
  double scale;

 private:
  double dropout_;
};
TORCH_MODULE(LoraAdapter);

class MultiHeadSelfAttentionImpl : public torch::nn::Module {
 public:
  MultiHeadSelfAttentionImpl(int64_t d_model, int64_t num_heads,
                             double dropout);
  torch::Tensor forward(const torch::Tensor& x);

  // Fused attention (at::scaled_dot_product_attention) by default; false:
  // the unfused matmul + softmax + matmul path, as a reference for tests
  // and //benchmarks:attention_bench. Same numerics within float error.
  void set_fused(bool fused) { fused_ = fused; }

  // Adds an adapter beside projection `target` (q_proj, k_proj, v_proj or
  // o_proj), registered as "lora_<target>".
  void AddAdapter(const std::string& target, int64_t rank, double alpha,
                  double dropout);
  void RemoveAdapters();
  torch::nn::Linear& Projection(const std::string& target);

  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr},
      o_proj{nullptr};
  std::map<std::string, LoraAdapter> adapters;

 private:
  int64_t num_heads_;
  int64_t head_dim_;
  bool fused_ = true;
  double attn_dropout_;
};
TORCH_MODULE(MultiHeadSelfAttention);

class EncoderLayerImpl : public torch::nn::Module {
 public:
  EncoderLayerImpl(int64_t d_model, int64_t num_heads, int64_t ff_dim,
                   double dropout);
  torch::Tensor forward(const torch::Tensor& x);

  MultiHeadSelfAttention self_attn{nullptr};
  torch::nn::Linear ff1{nullptr}, ff2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(EncoderLayer);

class SpatioTemporalTransformerImpl : public torch::nn::Module {
 public:
  explicit SpatioTemporalTransformerImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x);  // Head(Encode(x))
  // Embedding, token encoding and encoder layers: [batch, tokens,
  // HeadInputFeatures], the last layer's output and, under
  // embedding_skip, the embedding (before the token encoding) beside it.
  torch::Tensor Encode(const torch::Tensor& x);
  // Dimension-reduction MLP and regression layer ("reduction.0", "head").
  torch::Tensor Head(const torch::Tensor& h);

  const ModelConfig& config() const { return config_; }
  MultiHeadSelfAttention& Attention(int64_t layer);

  torch::nn::Sequential embedding{nullptr};
  torch::nn::ModuleList layers{nullptr};
  torch::nn::Sequential reduction{nullptr};
  torch::nn::Linear head{nullptr};

 private:
  ModelConfig config_;
  // TokenEncoding for the last input's token count, on its device: made
  // once, not at every forward, where it was a host-to-device copy each
  // step (a synchronising one, from pageable memory) that a CUDA graph
  // also cannot capture. Not a buffer: not a parameter, not saved.
  torch::Tensor encoding_;
};
TORCH_MODULE(SpatioTemporalTransformer);

// Sinusoidal encoding of token positions, [tokens, d_model].
torch::Tensor TokenEncoding(int64_t tokens, int64_t d_model);

// The bytes a model keeps between training steps under Adam: each
// parameter, and for those that require a gradient the gradient and the
// two moments (what TaskWork.state_bytes records).
int64_t TrainingStateBytes(SpatioTemporalTransformer& model);

// Mean squared error of a [batch, tokens, out] prediction.
torch::Tensor MseLoss(const torch::Tensor& prediction,
                      const torch::Tensor& target);

}  // namespace hpt

#endif  // HPT_MODELS_ST_TRANSFORMER_H_
