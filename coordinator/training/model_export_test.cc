#include "coordinator/training/model_export.h"

#include "gtest/gtest.h"

namespace hpt {
namespace {

HostTensor T(std::vector<int64_t> shape, std::vector<float> data) {
  HostTensor t(std::move(shape));
  t.data = std::move(data);
  return t;
}

TEST(MergeLoraTensorsTest, FoldsScaledBAIntoTheBaseAndDropsTheRest) {
  std::map<std::string, HostTensor> params;
  params["layers.0.self_attn.q_proj.weight"] = T({2, 2}, {1, 0, 0, 1});
  params["layers.0.self_attn.q_proj.bias"] = T({2}, {5, 6});
  params["layers.0.self_attn.lora_q_proj.A.weight"] = T({1, 2}, {1, 2});  // r = 1
  params["layers.0.self_attn.lora_q_proj.B.weight"] = T({2, 1}, {3, 4});
  params["token_encoding"] = T({1, 2}, {0, 1});
  auto merged = MergeLoraTensors(params, /*alpha=*/0.5);
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_EQ(merged->size(), 2u);
  // W + 0.5 * [3; 4] [1 2] = [[1 + 1.5, 3], [2, 1 + 4]].
  EXPECT_EQ(merged->at("layers.0.self_attn.q_proj.weight").data,
            (std::vector<float>{2.5f, 3.0f, 2.0f, 5.0f}));
  EXPECT_EQ(merged->at("layers.0.self_attn.q_proj.bias").data, (std::vector<float>{5, 6}));
}

TEST(MergeLoraTensorsTest, AnAdapterWithoutItsBaseIsAnError) {
  std::map<std::string, HostTensor> params;
  params["layers.0.self_attn.lora_v_proj.A.weight"] = T({1, 2}, {1, 2});
  params["layers.0.self_attn.lora_v_proj.B.weight"] = T({2, 1}, {3, 4});
  auto merged = MergeLoraTensors(params, 1.0);
  EXPECT_EQ(merged.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(merged.status().message().find("layers.0.self_attn.v_proj.weight"),
            std::string::npos);
}

}  // namespace
}  // namespace hpt
