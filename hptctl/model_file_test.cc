#include "hptctl/model_file.h"

#include <torch/torch.h>

#include <cstdio>

#include "gtest/gtest.h"
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

TEST(WriteTorchModelTest, TorchLoadGivesBackTheSameForward) {
  torch::manual_seed(1);
  SpatioTemporalTransformer source(Config());
  std::map<std::string, HostTensor> params;
  for (const auto& item : source->named_parameters()) {
    torch::Tensor t = item.value().detach().contiguous();
    HostTensor h(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
    std::copy_n(t.data_ptr<float>(), h.data.size(), h.data.data());
    params[item.key()] = std::move(h);
  }
  const std::string path = ::testing::TempDir() + "/model.pt";
  ASSERT_TRUE(WriteTorchModel(Config(), params, path).ok());
  torch::manual_seed(2);  // a different initialisation, overwritten by load
  SpatioTemporalTransformer loaded(Config());
  torch::load(loaded, path);
  source->eval();
  loaded->eval();
  const torch::Tensor x = torch::randn({2, 3, 4});
  EXPECT_TRUE(torch::equal(source->forward(x), loaded->forward(x)));

  params.erase("head.bias");
  const absl::Status missing = WriteTorchModel(Config(), params, path);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("'head.bias'"), std::string::npos);
}

TEST(WriteTorchModelTest, AnUnwritablePathIsOneLineNamingIt) {
  const absl::Status nowhere = WriteTorchModel(Config(), {}, "/proc/nope/model.pt");
  EXPECT_EQ(nowhere.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(nowhere.message(),
            "cannot write '/proc/nope/model.pt': folder '/proc/nope': No such file or directory");
}

}  // namespace
}  // namespace hpt
