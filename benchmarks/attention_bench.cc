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
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "benchmarks/median_time.h"
#include "models/model_config.h"
#include "models/st_transformer.h"

ABSL_FLAG(int, batch, 32, "Batch.");
ABSL_FLAG(int, tokens, 323, "Tokens per sample (the swe preset's 323 SNOTEL stations).");
ABSL_FLAG(int, repeats, 5, "Timed layer repetitions (median reported).");
ABSL_FLAG(int, model_steps, 1, "Timed whole-model steps per path (median); 0: skip.");
ABSL_FLAG(std::string, device, "cpu", "cpu or cuda:N.");

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

}  // namespace

// Long because it is a script: one timed section per attention variant, in
// the order the output prints them.
int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const torch::Device device(absl::GetFlag(FLAGS_device));
  const int64_t batch = absl::GetFlag(FLAGS_batch), tokens = absl::GetFlag(FLAGS_tokens);
  hpt::ModelConfig config = *hpt::PresetModelConfig("swe");
  config.set_input_features(8);
  config.set_output_features(1);
  std::printf("device %s, %d threads; swe shape: batch %lld, %lld tokens, %d heads, d_model %d\n",
              device.str().c_str(), at::get_num_threads(), (long long)batch, (long long)tokens,
              config.num_heads(), config.d_model());

  torch::manual_seed(0);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  // The attention itself: q, k, v [batch, heads, tokens, head_dim] in,
  // softmax(q k^T / sqrt(head_dim)) v out, and its backward.
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
    if (fused) {
      out = at::scaled_dot_product_attention(q, k, v);
    } else {
      out = torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-2, -1)) /
                                             std::sqrt(double(head_dim)), -1),
                          v);
    }
    out.backward(grad);
  };
  const double core_fused = MedianSeconds(repeats, device, [&] { core_step(true); });
  const double core_eager = MedianSeconds(repeats, device, [&] { core_step(false); });
  std::printf("attention fwd+bwd (q, k, v to context): fused %.1f ms, eager %.1f ms: "
              "fused is %.2fx eager\n",
              1e3 * core_fused, 1e3 * core_eager, core_eager / core_fused);

  hpt::MultiHeadSelfAttention layer(config.d_model(), config.num_heads(), /*dropout=*/0.0);
  layer->to(device);
  torch::Tensor x = torch::randn({batch, tokens, config.d_model()},
                                 torch::TensorOptions().device(device).requires_grad(true));
  torch::Tensor upstream = torch::randn({batch, tokens, config.d_model()}, device);
  auto layer_step = [&] {
    layer->zero_grad();
    x.mutable_grad() = torch::Tensor();
    layer->forward(x).backward(upstream);
  };
  layer->set_fused(true);
  const double fused_s = MedianSeconds(repeats, device, layer_step);
  layer->set_fused(false);
  const double eager_s = MedianSeconds(repeats, device, layer_step);
  std::printf("attention layer with its q, k, v, o projections, fwd+bwd: fused %.1f ms, eager %.1f ms: fused is %.2fx eager\n",
              1e3 * fused_s, 1e3 * eager_s, eager_s / fused_s);

  const int steps = absl::GetFlag(FLAGS_model_steps);
  if (steps <= 0) return 0;
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
    torch::mse_loss(model->forward(inputs), targets).backward();
    optimizer.step();
  };
  set_fused(true);
  const double fused_step = MedianSeconds(steps, device, model_step);
  set_fused(false);
  const double eager_step = MedianSeconds(steps, device, model_step);
  std::printf("swe preset training step: fused %.2f s, eager %.2f s: fused is %.2fx eager\n",
              fused_step, eager_step, eager_step / fused_step);
  return 0;
}
