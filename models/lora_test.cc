#include "models/lora.h"

#include "gtest/gtest.h"
#include "models/model_config.h"

namespace hpt {
namespace {

ModelConfig Config() {
  ModelConfig c = *PresetModelConfig("tiny");
  c.set_input_features(6);
  c.set_output_features(1);
  c.set_dropout(0.0);
  return c;
}

LoraConfig Lora(int rank) {
  LoraConfig l;
  l.set_enabled(true);
  l.set_rank(rank);
  l.set_dropout(0.0);  // deterministic comparisons
  l.set_dropout_set(true);
  return LoraDefaults(l);
}

TEST(LoraTest, NewAdaptersLeaveTheOutputExactlyUnchanged) {
  torch::manual_seed(1);
  SpatioTemporalTransformer model(Config());
  model->eval();
  torch::Tensor x = torch::randn({3, 5, 6});
  torch::Tensor before = model->forward(x);
  auto ranks = ApplyLora(model, Lora(4), {});
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  EXPECT_EQ(ranks->size(), 4u);  // 2 layers x (q, v)
  EXPECT_EQ(ranks->at("layers.1.self_attn.v_proj"), 4);
  EXPECT_TRUE(torch::equal(model->forward(x), before));
}

TEST(LoraTest, GradientsReachOnlyAdaptersAndModulesToSave) {
  torch::manual_seed(2);
  SpatioTemporalTransformer model(Config());
  ASSERT_TRUE(ApplyLora(model, Lora(2), {}).ok());
  model->train();
  torch::mse_loss(model->forward(torch::randn({2, 4, 6})), torch::randn({2, 4, 1}))
      .backward();
  int adapters = 0, saved = 0;
  for (const auto& p : model->named_parameters()) {
    const std::string& name = p.key();
    const bool adapter = name.find(".lora_") != std::string::npos;
    const bool to_save = name.rfind("embedding.", 0) == 0 ||
                         name.rfind("reduction.", 0) == 0 || name.rfind("head.", 0) == 0;
    if (adapter || to_save) {
      EXPECT_TRUE(p.value().requires_grad()) << name;
      EXPECT_TRUE(p.value().grad().defined()) << name;
      adapters += adapter;
      saved += to_save;
    } else {
      EXPECT_FALSE(p.value().requires_grad()) << name;
      EXPECT_FALSE(p.value().grad().defined()) << name;
    }
  }
  EXPECT_EQ(adapters, 8);  // 4 adapters x (A, B)
  EXPECT_EQ(saved, 8);     // embedding 2 linears, reduction 1, head 1: w + b
  // B starts at 0, so the first gradient flows to B only through A's output.
  EXPECT_GT(model->Attention(0)->adapters.at("q_proj")->B->weight.grad().abs().sum().item<float>(), 0);
}

TEST(LoraTest, SomeLayersFreezeAloneAndTheRestTrainsOn) {
  torch::manual_seed(3);
  SpatioTemporalTransformer model(Config());
  LoraConfig lora = Lora(2);
  lora.add_layers(1);
  auto ranks = ApplyLora(model, lora, {});
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  EXPECT_EQ(ranks->size(), 2u);  // layer 1's q and v only
  EXPECT_EQ(ranks->count("layers.0.self_attn.q_proj"), 0u);
  EXPECT_EQ(ranks->at("layers.1.self_attn.q_proj"), 2);
  model->train();
  torch::mse_loss(model->forward(torch::randn({2, 4, 6})), torch::randn({2, 4, 1}))
      .backward();
  int frozen = 0, layer0 = 0, adapters = 0;
  for (const auto& p : model->named_parameters()) {
    const std::string& name = p.key();
    if (name.find(".lora_") != std::string::npos) {
      ++adapters;
      EXPECT_EQ(name.rfind("layers.1.", 0), 0u) << name;
      EXPECT_TRUE(p.value().requires_grad()) << name;
    } else if (name.rfind("layers.1.", 0) == 0) {
      ++frozen;
      EXPECT_FALSE(p.value().requires_grad()) << name;
      EXPECT_FALSE(p.value().grad().defined()) << name;
    } else {
      // Layer 0 and the modules around the encoder all train on.
      layer0 += name.rfind("layers.0.", 0) == 0;
      EXPECT_TRUE(p.value().requires_grad()) << name;
      EXPECT_TRUE(p.value().grad().defined()) << name;
    }
  }
  EXPECT_EQ(adapters, 4);  // A and B of q and v
  EXPECT_GT(frozen, 4);
  EXPECT_GT(layer0, 4);
}

TEST(LoraTest, ALayerTheModelLacksIsRefused) {
  SpatioTemporalTransformer model(Config());
  LoraConfig lora = Lora(2);
  lora.add_layers(2);
  auto ranks = ApplyLora(model, lora, {});
  ASSERT_FALSE(ranks.ok());
  EXPECT_NE(ranks.status().message().find("hpt.lora.layers entry 2"), std::string::npos)
      << ranks.status();
  EXPECT_NE(ranks.status().message().find("0 to 1"), std::string::npos);
}

TEST(LoraTest, MergedModelMatchesTheAdaptedOne) {
  torch::manual_seed(3);
  SpatioTemporalTransformer model(Config());
  ASSERT_TRUE(ApplyLora(model, Lora(4), {}).ok());
  {
    torch::NoGradGuard no_grad;  // give the adapters something to say
    for (auto& p : model->named_parameters()) {
      if (p.key().find(".lora_") != std::string::npos) p.value().normal_(0, 0.05);
    }
  }
  model->eval();
  torch::Tensor x = torch::randn({3, 5, 6});
  torch::Tensor adapted = model->forward(x);
  MergeLora(model);
  EXPECT_EQ(model->named_parameters().size(), SpatioTemporalTransformer(Config())->named_parameters().size());
  torch::Tensor merged = model->forward(x);
  EXPECT_LE((merged - adapted).abs().max().item<float>(), 1e-5);
  EXPECT_GT((adapted - SpatioTemporalTransformer(Config())->forward(x)).abs().max().item<float>(), 0);
}

TEST(LoraTest, AutoRankHoldsTheEnergyShare) {
  // Singular values 4, 2, 1, 0.5 (energies 16, 4, 1, .25 of 21.25): 90 %
  // needs 2 (75.3 %, 94.1 %); 99 % needs 4 (98.8 % at 3).
  torch::Tensor q1 = std::get<0>(torch::linalg_qr(torch::randn({6, 4})));
  torch::Tensor q2 = std::get<0>(torch::linalg_qr(torch::randn({5, 4})));
  torch::Tensor delta = torch::matmul(q1 * torch::tensor({4.0, 2.0, 1.0, 0.5}), q2.t());
  EXPECT_EQ(AutoRank(delta, 0.9, 64), 2);
  EXPECT_EQ(AutoRank(delta, 0.99, 64), 4);
  EXPECT_EQ(AutoRank(delta, 0.99, 3), 3);  // capped

  torch::manual_seed(4);
  SpatioTemporalTransformer model(Config());
  std::map<std::string, torch::Tensor> initial;
  for (const auto& p : model->named_parameters()) initial[p.key()] = p.value().detach().clone();
  {
    torch::NoGradGuard no_grad;  // a rank-1 change of one target
    model->Attention(0)->q_proj->weight.add_(torch::outer(torch::randn({32}), torch::randn({32})));
  }
  LoraConfig lora = Lora(0);
  lora.set_auto_rank(true);
  auto ranks = ApplyLora(model, lora, initial);
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  EXPECT_EQ(ranks->at("layers.0.self_attn.q_proj"), 1);
  EXPECT_EQ(ranks->at("layers.0.self_attn.v_proj"), 1);  // no change: 1
}

TEST(LoraTest, BadConfigNamesTheField) {
  LoraConfig l = Lora(2);
  l.add_targets("ff1");
  EXPECT_EQ(ValidateLoraConfig(l).message(),
            "hpt.lora.targets entry 'ff1' is not q_proj, k_proj, v_proj or o_proj");
}

}  // namespace
}  // namespace hpt
