#include "models/model_flops.h"

#include "gtest/gtest.h"
#include "models/model_config.h"

namespace hpt {
namespace {

TEST(ModelFlopsTest, WindPresetCountsMatchTheModule) {
  ModelConfig c = *PresetModelConfig("wind");
  c.set_input_features(12);
  c.set_output_features(1);
  // The LibTorch module has 25,634,305 parameters (st_transformer_test).
  EXPECT_EQ(ParameterCount(c, false), 25634305);
  EXPECT_EQ(ParameterCount(c, true), 25634305 - 131328 - 257);
}

TEST(ModelFlopsTest, ForwardFlopsByHand) {
  ModelConfig c = *PresetModelConfig("tiny");  // d 32, 2 layers, FF x2
  c.set_input_features(4);
  c.set_output_features(1);
  // rows = 2 * 3 = 6; embedding 2*6*(4*32 + 32*32) = 13824; per layer
  // 2*6*(4*1024 + 2*32*64) + 4*2*9*32 = 98304 + 2304 = 100608; head
  // 2*6*(32*16 + 16) = 6336.
  ModelWork w = ForwardWork(c, 2, 3, false);
  EXPECT_DOUBLE_EQ(w.flops, 13824 + 2 * 100608 + 6336);
  EXPECT_DOUBLE_EQ(ForwardWork(c, 2, 3, true).flops, 13824 + 2 * 100608);
}

}  // namespace
}  // namespace hpt
