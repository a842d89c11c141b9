#include "models/model_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(ModelConfigTest, PaperPresetsMatchTable) {
  struct Row {
    const char* name;
    int heads, ff;
  } rows[] = {{"swe", 16, 4}, {"weather", 16, 4}, {"covid", 8, 4}, {"wind", 8, 2}};
  for (const Row& row : rows) {
    auto c = PresetModelConfig(row.name);
    ASSERT_TRUE(c.ok()) << row.name;
    EXPECT_EQ(c->num_layers(), 12) << row.name;
    EXPECT_EQ(c->d_model(), 512) << row.name;
    EXPECT_EQ(c->num_heads(), row.heads) << row.name;
    EXPECT_EQ(c->ff_multiplier(), row.ff) << row.name;
    EXPECT_TRUE(c->embedding_skip()) << row.name;
    EXPECT_EQ(HeadInputFeatures(*c), 2 * 512) << row.name;
  }
  // The small demo model reads its last layer alone.
  EXPECT_FALSE(PresetModelConfig("tiny")->embedding_skip());
  EXPECT_EQ(HeadInputFeatures(*PresetModelConfig("tiny")), 32);
}

TEST(ModelConfigTest, UnknownPresetListsChoices) {
  auto c = PresetModelConfig("huge");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), ::testing::HasSubstr("'huge'"));
  EXPECT_THAT(c.status().message(), ::testing::HasSubstr("wind"));
}

TEST(ModelConfigTest, ValidationNamesTheField) {
  ModelConfig c = *PresetModelConfig("tiny");
  c.set_input_features(12);
  c.set_output_features(1);
  EXPECT_TRUE(ValidateModelConfig(c).ok());
  c.set_num_heads(5);
  EXPECT_EQ(ValidateModelConfig(c).message(),
            "model.d_model (32) must be divisible by model.num_heads (5)");
  c.set_num_heads(4);
  c.set_input_features(0);
  EXPECT_EQ(ValidateModelConfig(c).message(),
            "model.input_features must be positive, got 0");
}

}  // namespace
}  // namespace hpt
