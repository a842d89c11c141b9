#include "models/torchscript_model.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <cstdio>
#include <sstream>

#include "gtest/gtest.h"
#include "models/model_config.h"
#include "models/st_transformer.h"

namespace hpt {
namespace {

ModelConfig Config() {
  ModelConfig c;
  c.set_input_features(4);
  c.set_output_features(1);
  c.set_d_model(8);
  c.set_num_layers(1);
  c.set_num_heads(2);
  c.set_ff_multiplier(2);
  c.set_reduction_dim(4);
  return c;
}

// The model's parameters as host tensors, by name.
std::map<std::string, HostTensor> ParamsOf(const SpatioTemporalTransformerImpl& model) {
  std::map<std::string, HostTensor> params;
  for (const auto& item : model.named_parameters()) {
    torch::Tensor t = item.value().detach().contiguous();
    HostTensor h(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
    std::copy_n(t.data_ptr<float>(), h.data.size(), h.data.data());
    params[item.key()] = std::move(h);
  }
  return params;
}

TEST(TorchModelBytesTest, TorchLoadGivesBackTheSameForward) {
  torch::manual_seed(1);
  SpatioTemporalTransformer source(Config());
  std::map<std::string, HostTensor> params = ParamsOf(*source);
  const absl::StatusOr<std::string> bytes = TorchModelBytes(Config(), params, DataUnits());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  torch::manual_seed(2);  // a different initialisation, overwritten by load
  SpatioTemporalTransformer loaded(Config());
  std::istringstream file(*bytes);
  torch::load(loaded, file);
  source->eval();
  loaded->eval();
  const torch::Tensor x = torch::randn({2, 3, 4});
  EXPECT_TRUE(torch::equal(source->forward(x), loaded->forward(x)));

  // The same file as TorchScript, with its forward: no model class needed.
  std::istringstream script_file(*bytes);
  torch::jit::Module script = torch::jit::load(script_file);
  const torch::Tensor scripted = script.forward({x}).toTensor();
  EXPECT_TRUE(torch::allclose(scripted, source->forward(x), 1e-6, 1e-6))
      << (scripted - source->forward(x)).abs().max().item<float>();
  // Another token count than any seen before: the encoding follows it.
  const torch::Tensor wide = torch::randn({1, 7, 4});
  EXPECT_TRUE(
      torch::allclose(script.forward({wide}).toTensor(), source->forward(wide), 1e-6, 1e-6));
  EXPECT_EQ(script.named_parameters().size(), source->named_parameters().size());
  for (const auto& p : script.named_parameters()) {
    EXPECT_TRUE(torch::equal(p.value, source->named_parameters()[p.name])) << p.name;
  }

  params.erase("head.bias");
  const absl::Status missing = TorchModelBytes(Config(), params, DataUnits()).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("'head.bias'"), std::string::npos);
}

// The paper presets' skip: the script concatenates the embedding beside
// the last layer as the module does.
TEST(TorchModelBytesTest, TheScriptKeepsTheEmbeddingSkip) {
  ModelConfig config = Config();
  config.set_embedding_skip(true);
  torch::manual_seed(3);
  SpatioTemporalTransformer source(config);
  const absl::StatusOr<std::string> bytes = TorchModelBytes(config, ParamsOf(*source), DataUnits());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  std::istringstream script_file(*bytes);
  torch::jit::Module script = torch::jit::load(script_file);
  source->eval();
  const torch::Tensor x = torch::randn({2, 3, 4});
  EXPECT_TRUE(torch::allclose(script.forward({x}).toTensor(), source->forward(x), 1e-6, 1e-6));
  EXPECT_EQ(source->named_parameters()["reduction.0.weight"].size(1), 16);
}

// With the job's data units the module takes raw values and gives raw
// forecasts: each station z-scored on the way in, undone on the way out;
// forward_normalised is the model itself.
TEST(TorchModelBytesTest, TheModuleWorksInTheDataUnits) {
  torch::manual_seed(1);
  SpatioTemporalTransformer source(Config());
  source->eval();
  std::map<std::string, HostTensor> params = ParamsOf(*source);
  DataUnits units;
  units.set_per_token(true);
  for (float m : {15.0f, -3.0f, 100.0f}) units.add_mean(m);
  for (float sd : {8.0f, 0.5f, 20.0f}) units.add_sd(sd);
  EXPECT_TRUE(UsesDataUnits(units));
  const absl::StatusOr<std::string> bytes = TorchModelBytes(Config(), params, units);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  std::istringstream file(*bytes);
  torch::jit::Module script = torch::jit::load(file);
  const torch::Tensor mean = torch::tensor({15.0f, -3.0f, 100.0f}).view({3, 1});
  const torch::Tensor sd = torch::tensor({8.0f, 0.5f, 20.0f}).view({3, 1});
  const torch::Tensor raw = torch::randn({2, 3, 4}) * sd + mean;
  const torch::Tensor want = source->forward((raw - mean) / sd) * sd + mean;
  const torch::Tensor got = script.forward({raw}).toTensor();
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-4)) << (got - want).abs().max().item<float>();
  const torch::Tensor z = torch::randn({2, 3, 4});
  EXPECT_TRUE(torch::allclose(script.get_method("forward_normalised")({z}).toTensor(),
                              source->forward(z), 1e-6, 1e-6));
  units.set_per_token(false);  // tokens are groups of stations: no raw forward
  EXPECT_FALSE(UsesDataUnits(units));
}

}  // namespace
}  // namespace hpt
