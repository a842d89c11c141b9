#include "models/model_shape.h"

#include "gtest/gtest.h"
#include "models/model_config.h"

namespace hpt {
namespace {

TEST(ModelShapeTest, WindPresetLine) {
  ModelConfig c = *PresetModelConfig("wind");
  c.set_input_features(12);
  c.set_output_features(1);
  // 25,765,377: the LibTorch module's count (st_transformer_test).
  EXPECT_EQ(ModelShapeLine(c),
            "12 layers, d_model 512, 8 heads, FF x2, reduction 256, embedding skip; "
            "25,765,377 parameters");
}

TEST(ModelShapeTest, OverriddenTinyLineSaysSingularsAndNoSkip) {
  ModelConfig c = *PresetModelConfig("tiny");
  c.set_input_features(12);
  c.set_output_features(1);
  c.set_num_layers(1);
  c.set_num_heads(1);
  // Embedding 12x32+32 + 32x32+32 = 1,472; one layer 4x(32x32+32) +
  // (32x64+64) + (64x32+32) + 4x32 = 8,544; reduction 32x16+16 + 16+1 = 545.
  EXPECT_EQ(ModelShapeLine(c),
            "1 layer, d_model 32, 1 head, FF x2, reduction 16; 10,561 parameters");
}

TEST(ModelShapeTest, GroupsThousands) {
  EXPECT_EQ(GroupThousands(0), "0");
  EXPECT_EQ(GroupThousands(999), "999");
  EXPECT_EQ(GroupThousands(1000), "1,000");
  EXPECT_EQ(GroupThousands(-1234567), "-1,234,567");
  EXPECT_EQ(GroupThousands(100000), "100,000");
}

}  // namespace
}  // namespace hpt
