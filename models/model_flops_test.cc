#include "models/model_flops.h"

#include "gtest/gtest.h"
#include "models/model_config.h"

namespace hpt {
namespace {

TEST(ModelFlopsTest, WindPresetCountsMatchTheModule) {
  ModelConfig c = *PresetModelConfig("wind");
  c.set_input_features(12);
  c.set_output_features(1);
  // The LibTorch module has 25,765,377 parameters (st_transformer_test),
  // 131,072 of them the reduction's columns that read the embedding.
  EXPECT_EQ(ParameterCount(c, false), 25765377);
  EXPECT_EQ(ParameterCount(c, true), 25765377 - 131328 - 131072 - 257);
  c.set_embedding_skip(false);
  EXPECT_EQ(ParameterCount(c, false), 25765377 - 131072);
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
  // The reduction reading 64 columns: 2*6*(64*16 + 16) = 12480.
  c.set_embedding_skip(true);
  EXPECT_DOUBLE_EQ(ForwardWork(c, 2, 3, false).flops, 13824 + 2 * 100608 + 12480);
}

}  // namespace
}  // namespace hpt
