#include "models/st_transformer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/record_function.h>

#include <cmath>
#include <mutex>
#include <string>

#include "devices/cpu_kernels.h"
#include "models/model_config.h"

namespace hpt {


namespace {

class CounterDropout : public torch::autograd::Function<CounterDropout> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               double p) {
    uint64_t seed;
    {
      at::Generator generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      seed = at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
    }
    torch::Tensor mask = torch::empty(x.sizes(), x.options().dtype(torch::kFloat));
    {
      // Costed as the bernoulli kernel a GPU would launch for it.
      RECORD_FUNCTION("aten::bernoulli_", std::vector<c10::IValue>({mask}));
      FillDropoutMask(mask.data_ptr<float>(), mask.numel(), p, seed);
    }
    ctx->save_for_backward({mask});
    return x * mask;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::Tensor mask = ctx->get_saved_variables()[0];
    return {grads[0] * mask, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor Dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (x.is_cuda() || x.scalar_type() != torch::kFloat || p >= 1) {
    return torch::dropout(x, p, /*train=*/true);
  }
  return CounterDropout::apply(x.contiguous(), p);
}

LoraAdapterImpl::LoraAdapterImpl(int64_t in, int64_t out, int64_t rank,
                                 double alpha, double dropout)
    : scale(alpha / double(rank)) {
  A = register_module("A", torch::nn::Linear(torch::nn::LinearOptions(in, rank).bias(false)));
  B = register_module("B", torch::nn::Linear(torch::nn::LinearOptions(rank, out).bias(false)));
  torch::NoGradGuard no_grad;
  B->weight.zero_();  // a new adapter changes nothing
  dropout_ = dropout;
}

torch::Tensor LoraAdapterImpl::forward(const torch::Tensor& x) {
  // The scale on the rank-r activation, not the [.., out] one: the same
  // product with out / rank times fewer multiplies.
  return B(A(Dropout(x, dropout_, is_training())) * scale);
}

torch::Tensor LoraAdapterImpl::Delta() const {
  return torch::matmul(B->weight, A->weight) * scale;
}

void MultiHeadSelfAttentionImpl::AddAdapter(const std::string& target, int64_t rank,
                                            double alpha, double dropout) {
  torch::nn::Linear& base = Projection(target);
  const int64_t in = base->weight.size(1), out = base->weight.size(0);
  LoraAdapter adapter(in, out, rank, alpha, dropout);
  adapter->to(base->weight.device());
  adapters.insert_or_assign(target, register_module("lora_" + target, adapter));
}

void MultiHeadSelfAttentionImpl::RemoveAdapters() {
  for (auto& [target, adapter] : adapters) unregister_module("lora_" + target);
  adapters.clear();
}

torch::nn::Linear& MultiHeadSelfAttentionImpl::Projection(const std::string& target) {
  if (target == "q_proj") return q_proj;
  if (target == "k_proj") return k_proj;
  if (target == "v_proj") return v_proj;
  return o_proj;
}

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t d_model,
                                                       int64_t num_heads,
                                                       double dropout)
    : num_heads_(num_heads), head_dim_(d_model / num_heads) {
  q_proj = register_module("q_proj", torch::nn::Linear(d_model, d_model));
  k_proj = register_module("k_proj", torch::nn::Linear(d_model, d_model));
  v_proj = register_module("v_proj", torch::nn::Linear(d_model, d_model));
  o_proj = register_module("o_proj", torch::nn::Linear(d_model, d_model));
  attn_dropout_ = dropout;
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), tokens = x.size(1);
  // [batch, tokens, d] -> [batch, heads, tokens, head_dim]
  auto split = [&](const torch::Tensor& t) {
    return t.view({batch, tokens, num_heads_, head_dim_}).transpose(1, 2);
  };
  auto project = [&](const std::string& name, torch::nn::Linear& base) {
    torch::Tensor out = base(x);
    auto it = adapters.find(name);
    if (it != adapters.end()) out = out + it->second->forward(x);
    return out;
  };
  torch::Tensor q = split(project("q_proj", q_proj));
  torch::Tensor k = split(project("k_proj", k_proj));
  torch::Tensor v = split(project("v_proj", v_proj));
  // Fused attention (flash kernels forward and backward on CPU; flash or
  // memory-efficient on CUDA): softmax(q k^T / sqrt(head_dim)) v without
  // materialising the [batch, heads, tokens, tokens] scores. Its dropout
  // stays 0: a non-zero dropout_p sends the CPU path back to the unfused
  // math kernels, so the attention dropout acts on the context instead
  // (same rate, before the output projection).
  torch::Tensor heads;
  if (fused_) {
    heads = at::scaled_dot_product_attention(q, k, v);
  } else {
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(head_dim_));
    heads = torch::matmul(torch::softmax(scores, -1), v);
  }
  torch::Tensor context = heads.transpose(1, 2).reshape({batch, tokens, num_heads_ * head_dim_});
  context = Dropout(context, attn_dropout_, is_training());
  torch::Tensor out = o_proj(context);
  auto it = adapters.find("o_proj");
  if (it != adapters.end()) out = out + it->second->forward(context);
  return out;
}

EncoderLayerImpl::EncoderLayerImpl(int64_t d_model, int64_t num_heads,
                                   int64_t ff_dim, double dropout) {
  self_attn = register_module(
      "self_attn", MultiHeadSelfAttention(d_model, num_heads, dropout));
  ff1 = register_module("ff1", torch::nn::Linear(d_model, ff_dim));
  ff2 = register_module("ff2", torch::nn::Linear(ff_dim, d_model));
  norm1 = register_module(
      "norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  norm2 = register_module(
      "norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  dropout_ = dropout;
}

torch::Tensor EncoderLayerImpl::forward(const torch::Tensor& x) {
  // Post-norm, as in the original transformer encoder.
  torch::Tensor h = norm1(x + Dropout(self_attn(x), dropout_, is_training()));
  torch::Tensor ff = ff2(Dropout(torch::relu(ff1(h)), dropout_, is_training()));
  return norm2(h + Dropout(ff, dropout_, is_training()));
}

SpatioTemporalTransformerImpl::SpatioTemporalTransformerImpl(
    const ModelConfig& config)
    : config_(config) {
  const int64_t d = config.d_model();
  embedding = register_module(
      "embedding",
      torch::nn::Sequential(torch::nn::Linear(config.input_features(), d),
                            torch::nn::ReLU(), torch::nn::Linear(d, d)));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int i = 0; i < config.num_layers(); ++i) {
    layers->push_back(EncoderLayer(d, config.num_heads(),
                                   int64_t(config.ff_multiplier()) * d,
                                   config.dropout()));
  }
  reduction = register_module(
      "reduction",
      torch::nn::Sequential(torch::nn::Linear(HeadInputFeatures(config), config.reduction_dim()),
                            torch::nn::ReLU()));
  head = register_module(
      "head",
      torch::nn::Linear(config.reduction_dim(), config.output_features()));
}

MultiHeadSelfAttention& SpatioTemporalTransformerImpl::Attention(int64_t layer) {
  return layers[layer]->as<EncoderLayer>()->self_attn;
}

torch::Tensor SpatioTemporalTransformerImpl::Encode(const torch::Tensor& x) {
  const torch::Tensor embedded = embedding->forward(x);
  if (!encoding_.defined() || encoding_.size(0) != x.size(1) ||
      encoding_.device() != embedded.device()) {
    encoding_ = TokenEncoding(x.size(1), config_.d_model()).to(embedded.device());
  }
  torch::Tensor h = embedded + encoding_;
  for (const auto& layer : *layers) h = layer->as<EncoderLayer>()->forward(h);
  if (config_.embedding_skip()) return torch::cat({h, embedded}, -1);
  return h;
}

torch::Tensor SpatioTemporalTransformerImpl::Head(const torch::Tensor& h) {
  return head(reduction->forward(h));
}

torch::Tensor SpatioTemporalTransformerImpl::forward(const torch::Tensor& x) {
  return Head(Encode(x));
}

torch::Tensor TokenEncoding(int64_t tokens, int64_t d_model) {
  torch::Tensor position =
      torch::arange(tokens, torch::kFloat32).unsqueeze(1);  // [T, 1]
  torch::Tensor div = torch::exp(torch::arange(0, d_model, 2, torch::kFloat32) *
                                 (-std::log(10000.0) / d_model));
  torch::Tensor enc = torch::zeros({tokens, d_model});
  enc.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)},
                 torch::sin(position * div));
  enc.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)},
                 torch::cos(position * div).narrow(1, 0, d_model / 2));
  return enc;
}

torch::Tensor MseLoss(const torch::Tensor& prediction,
                      const torch::Tensor& target) {
  return torch::mse_loss(prediction, target);
}

int64_t TrainingStateBytes(SpatioTemporalTransformer& model) {
  int64_t bytes = 0;
  for (const torch::Tensor& p : model->parameters()) {
    const int64_t b = p.numel() * int64_t(p.element_size());
    bytes += p.requires_grad() ? 4 * b : b;
  }
  return bytes;
}

}  // namespace hpt
