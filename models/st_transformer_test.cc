#include "models/st_transformer.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "models/model_config.h"

namespace hpt {
namespace {

ModelConfig TinyConfig() {
  ModelConfig c = *PresetModelConfig("tiny");
  c.set_input_features(6);
  c.set_output_features(2);
  return c;
}

TEST(SpatioTemporalTransformerTest, OutputShapeIsPerToken) {
  torch::manual_seed(1);
  SpatioTemporalTransformer model(TinyConfig());
  torch::Tensor y = model->forward(torch::randn({3, 5, 6}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 5, 2}));
}

TEST(SpatioTemporalTransformerTest, AttentionMixesInformationAcrossTokens) {
  torch::manual_seed(2);
  SpatioTemporalTransformer model(TinyConfig());
  model->eval();
  torch::Tensor x = torch::randn({1, 5, 6});
  torch::Tensor x2 = x.clone();
  x2.index_put_({0, 4}, x2.index({0, 4}) + 1.0);  // perturb the last token
  torch::Tensor y = model->forward(x), y2 = model->forward(x2);
  // Every other token's output must change: attention spans all tokens.
  for (int t = 0; t < 4; ++t) {
    EXPECT_GT((y[0][t] - y2[0][t]).abs().max().item<float>(), 1e-5)
        << "token " << t;
  }
}

TEST(FusedAttentionTest, MatchesTheEagerPathForwardAndBackward) {
  torch::manual_seed(7);
  const int64_t heads = 4;
  MultiHeadSelfAttention fused(64, heads, /*dropout=*/0.0);
  torch::Tensor x = torch::randn({3, 37, 64}, torch::requires_grad());
  torch::Tensor y_fused = fused->forward(x);
  fused->set_fused(false);
  torch::Tensor y_eager = fused->forward(x);
  EXPECT_LT((y_fused - y_eager).abs().max().item<float>(), 1e-5);

  torch::Tensor upstream = torch::randn_like(y_fused);
  auto grads = [&](const torch::Tensor& y) {
    std::vector<torch::Tensor> inputs = {x, fused->q_proj->weight, fused->k_proj->weight,
                                         fused->v_proj->weight};
    return torch::autograd::grad({y}, inputs, {upstream}, /*retain_graph=*/true);
  };
  const std::vector<torch::Tensor> g_fused = grads(y_fused), g_eager = grads(y_eager);
  for (size_t i = 0; i < g_fused.size(); ++i) {
    EXPECT_LT((g_fused[i] - g_eager[i]).abs().max().item<float>(), 1e-4) << "input " << i;
    EXPECT_GT(g_fused[i].abs().max().item<float>(), 1e-3) << "input " << i;
  }
}

TEST(FusedAttentionTest, TheCpuPicksFlashOnlyWithoutDropoutOnTheWeights) {
  // at::_fused_sdp_choice: 0 math (unfused), 1 flash (sdp::SDPBackend).
  torch::Tensor q = torch::randn({2, 4, 37, 16});
  EXPECT_EQ(at::_fused_sdp_choice(q, q, q), 1);
  EXPECT_EQ(at::_fused_sdp_choice(q, q, q, {}, /*dropout_p=*/0.1), 0);
}

TEST(SpatioTemporalTransformerTest, NamedProjectionsExist) {
  SpatioTemporalTransformer model(TinyConfig());
  auto params = model->named_parameters();
  EXPECT_TRUE(params.contains("layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(params.contains("layers.1.self_attn.v_proj.weight"));
  EXPECT_TRUE(params.contains("embedding.0.weight"));
  EXPECT_TRUE(params.contains("head.weight"));
}

TEST(SpatioTemporalTransformerTest, WindPresetParameterCount) {
  ModelConfig c = *PresetModelConfig("wind");
  c.set_input_features(12);
  c.set_output_features(1);
  SpatioTemporalTransformer model(c);
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  // Per layer: 4 (512x512 + 512) + (512x1024 + 1024) + (1024x512 + 512)
  // + 2 LayerNorms (2 x 1024) = 2,102,784; x 12 = 25,233,408.
  // Embedding 12x512+512 + 512x512+512 = 269,312; reduction 512x256+256 =
  // 131,328 + 131,072 for the 512 columns that read the embedding beside
  // the last layer (1024 x 256 in all); head 256+1 = 257.
  EXPECT_EQ(n, 25233408 + 269312 + 131328 + 131072 + 257);
  EXPECT_EQ(model->reduction->named_parameters()["0.weight"].sizes(),
            torch::IntArrayRef({256, 1024}));
}

// Under embedding_skip the reduction reads [last layer, embedding]: its
// second half of columns sees the embedding alone, so with the layers'
// part of the weight zeroed the prediction no longer depends on them.
TEST(SpatioTemporalTransformerTest, TheSkipFeedsTheEmbeddingToTheReduction) {
  ModelConfig c = TinyConfig();
  c.set_embedding_skip(true);
  torch::manual_seed(4);
  SpatioTemporalTransformer model(c);
  model->eval();
  const torch::Tensor x = torch::randn({2, 5, c.input_features()});
  const torch::Tensor encoded = model->Encode(x);
  ASSERT_EQ(encoded.size(-1), 2 * c.d_model());
  EXPECT_TRUE(
      torch::allclose(encoded.narrow(-1, c.d_model(), c.d_model()), model->embedding->forward(x)));
  torch::NoGradGuard no_grad;
  model->reduction->named_parameters()["0.weight"].narrow(1, 0, c.d_model()).zero_();
  const torch::Tensor before = model->forward(x);
  for (auto& item : model->layers->named_parameters()) item.value().normal_();
  EXPECT_TRUE(torch::equal(model->forward(x), before));
}

TEST(TokenEncodingTest, MatchesSinusoidFormula) {
  torch::Tensor e = TokenEncoding(3, 4);
  EXPECT_NEAR(e[2][0].item<float>(), std::sin(2.0), 1e-6);
  EXPECT_NEAR(e[2][1].item<float>(), std::cos(2.0), 1e-6);
  EXPECT_NEAR(e[2][2].item<float>(), std::sin(2.0 / 100.0), 1e-6);
}

// The model keeps its token encoding between forwards; a forward with
// another token count gets that count's, as a model that never saw the
// first one does.
TEST(TokenEncodingTest, AKeptEncodingFollowsTheTokenCount) {
  torch::manual_seed(3);
  SpatioTemporalTransformer model(TinyConfig());
  torch::manual_seed(3);
  SpatioTemporalTransformer fresh(TinyConfig());
  model->eval();
  fresh->eval();
  torch::Tensor five = torch::randn({2, 5, 6}), seven = torch::randn({2, 7, 6});
  model->forward(five);
  torch::Tensor y = model->forward(seven);
  EXPECT_TRUE(torch::allclose(y, fresh->forward(seven)));
  EXPECT_TRUE(torch::allclose(model->forward(five), fresh->forward(five)));
  EXPECT_FALSE(torch::allclose(model->forward(seven).narrow(1, 0, 5), model->forward(five)));
}

}  // namespace
}  // namespace hpt
