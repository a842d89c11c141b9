// Fused against eager attention on this machine's CPU (or a GPU with
// --device=cuda:0), both measured in this run:
//   1. attention forward + backward at the swe shape (batch 32, 323 tokens,
//      16 heads, d_model 512): at::scaled_dot_product_attention (flash
//      kernels) vs matmul + softmax + matmul, q, k, v to context;
//   2. the same inside the model's attention layer, with its four
//      projections (which both paths share);
//   3. one whole training step (forward, backward, AdamW) of the swe preset
//      at the same batch, with each attention path.
//
//   bazel run -c opt //benchmarks:attention_bench
//   bazel run -c opt //benchmarks:attention_bench -- --model_steps=0   # the layer only
//
// Each section runs in fp32 and under bf16 autocast (--precision=both, the
// default): in fp32 no flash kernel applies on a GPU; under bf16 SDPA may
// take one.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/median_time.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "workers/gpu/bf16_autocast.h"

ABSL_FLAG(int, batch, 32, "Batch.");
ABSL_FLAG(int, tokens, 323, "Tokens per sample (the swe preset's 323 SNOTEL stations).");
ABSL_FLAG(int, repeats, 5, "Timed layer repetitions (median reported).");
ABSL_FLAG(int, model_steps, 1, "Timed whole-model steps per path (median); 0: skip.");
ABSL_FLAG(std::string, device, "cpu", "cpu or cuda:N.");
ABSL_FLAG(std::string, precision, "both", "fp32, bf16 (autocast) or both.");

namespace {

// Median of `repeats` timed calls; a CUDA device is synchronised inside
// each, so queued kernels count.
template <typename Fn>
double MedianSeconds(int repeats, const torch::Device& device, Fn fn) {
  return hpt::MedianSeconds(repeats, [&] {
    fn();
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  });
}

// Fused against eager at the attention itself: q, k, v [batch, heads,
// tokens, head_dim] in, softmax(q k^T / sqrt(head_dim)) v out, backward.
void CoreAttention(const hpt::ModelConfig& config, int64_t batch, int64_t tokens, bool bf16,
                   const torch::Device& device, int repeats) {
  const int64_t heads = config.num_heads(), head_dim = config.d_model() / heads;
  auto leaf = [&] {
    return torch::randn({batch, heads, tokens, head_dim},
                        torch::TensorOptions().device(device).requires_grad(true));
  };
  torch::Tensor q = leaf(), k = leaf(), v = leaf();
  torch::Tensor grad = torch::randn({batch, heads, tokens, head_dim}, device);
  auto core_step = [&](bool fused) {
    for (torch::Tensor* t : {&q, &k, &v}) t->mutable_grad() = torch::Tensor();
    torch::Tensor out;
    {
      hpt::Bf16Autocast autocast(device, bf16);
      if (fused) {
        out = at::scaled_dot_product_attention(q, k, v);
      } else {
        out = torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-2, -1)) /
                                               std::sqrt(double(head_dim)), -1),
                            v);
      }
    }
    out.backward(grad.to(out.scalar_type()));
  };
  const double fused = MedianSeconds(repeats, device, [&] { core_step(true); });
  const double eager = MedianSeconds(repeats, device, [&] { core_step(false); });
  std::printf("[%s] attention fwd+bwd (q, k, v to context): fused %.1f ms, eager %.1f ms: "
              "fused is %.2fx eager\n",
              bf16 ? "bf16" : "fp32", 1e3 * fused, 1e3 * eager, eager / fused);
}

// The same inside the model's attention layer, with its four projections.
void AttentionLayer(const hpt::ModelConfig& config, int64_t batch, int64_t tokens, bool bf16,
                    const torch::Device& device, int repeats) {
  hpt::MultiHeadSelfAttention layer(config.d_model(), config.num_heads(), /*dropout=*/0.0);
  layer->to(device);
  torch::Tensor x = torch::randn({batch, tokens, config.d_model()},
                                 torch::TensorOptions().device(device).requires_grad(true));
  torch::Tensor upstream = torch::randn({batch, tokens, config.d_model()}, device);
  auto layer_step = [&] {
    layer->zero_grad();
    x.mutable_grad() = torch::Tensor();
    torch::Tensor out;
    {
      hpt::Bf16Autocast autocast(device, bf16);
      out = layer->forward(x);
    }
    out.backward(upstream.to(out.scalar_type()));
  };
  layer->set_fused(true);
  const double fused = MedianSeconds(repeats, device, layer_step);
  layer->set_fused(false);
  const double eager = MedianSeconds(repeats, device, layer_step);
  std::printf("[%s] attention layer with its q, k, v, o projections, fwd+bwd: fused %.1f ms, "
              "eager %.1f ms: fused is %.2fx eager\n",
              bf16 ? "bf16" : "fp32", 1e3 * fused, 1e3 * eager, eager / fused);
}

// One whole training step (forward, backward, AdamW) with each path.
void ModelStep(const hpt::ModelConfig& config, int64_t batch, int64_t tokens, bool bf16,
               const torch::Device& device, int steps) {
  hpt::SpatioTemporalTransformer model(config);
  model->to(device);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-4));
  torch::Tensor inputs = torch::randn({batch, tokens, config.input_features()}, device);
  torch::Tensor targets = torch::randn({batch, tokens, config.output_features()}, device);
  auto set_fused = [&](bool fused) {
    for (auto& module : model->modules(/*include_self=*/false)) {
      if (auto* attention = module->as<hpt::MultiHeadSelfAttentionImpl>()) {
        attention->set_fused(fused);
      }
    }
  };
  auto model_step = [&] {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      hpt::Bf16Autocast autocast(device, bf16);
      loss = torch::mse_loss(model->forward(inputs), targets);
    }
    loss.backward();
    optimizer.step();
  };
  set_fused(true);
  const double fused = MedianSeconds(steps, device, model_step);
  set_fused(false);
  const double eager = MedianSeconds(steps, device, model_step);
  std::printf("[%s] swe preset training step: fused %.2f s, eager %.2f s: fused is %.2fx eager\n",
              bf16 ? "bf16" : "fp32", fused, eager, eager / fused);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const torch::Device device(absl::GetFlag(FLAGS_device));
  const int64_t batch = absl::GetFlag(FLAGS_batch), tokens = absl::GetFlag(FLAGS_tokens);
  const std::string precision = absl::GetFlag(FLAGS_precision);
  if (precision != "fp32" && precision != "bf16" && precision != "both") {
    std::fprintf(stderr, "--precision must be fp32, bf16 or both, got '%s'\n", precision.c_str());
    return 2;
  }
  hpt::ModelConfig config = *hpt::PresetModelConfig("swe");
  config.set_input_features(8);
  config.set_output_features(1);
  std::printf("device %s, %d threads; swe shape: batch %lld, %lld tokens, %d heads, d_model %d\n",
              device.str().c_str(), at::get_num_threads(), (long long)batch, (long long)tokens,
              config.num_heads(), config.d_model());
  const int repeats = absl::GetFlag(FLAGS_repeats), steps = absl::GetFlag(FLAGS_model_steps);
  for (bool bf16 : {false, true}) {
    if ((bf16 && precision == "fp32") || (!bf16 && precision == "bf16")) continue;
    torch::manual_seed(0);
    CoreAttention(config, batch, tokens, bf16, device, repeats);
    AttentionLayer(config, batch, tokens, bf16, device, repeats);
    if (steps > 0) ModelStep(config, batch, tokens, bf16, device, steps);
  }
  return 0;
}
