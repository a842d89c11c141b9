#include "common/likely_names.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::vector<std::string> kSettings = {
    "reference_gpu", "gpu_precision", "reram_adc_bits", "reram_cell_bits",
    "systolic_rows", "systolic_cols", "gpu_baseline",   "max_steps_per_epoch"};

TEST(LikelyNamesTest, ASmallTypoFindsTheName) {
  EXPECT_THAT(LikelyNames("reram_adc_bit", kSettings), ElementsAre("reram_adc_bits"));
  EXPECT_THAT(LikelyNames("systolic_row", kSettings), ElementsAre("systolic_rows"));
  // Dots, dashes and case read as the name's underscores.
  EXPECT_THAT(LikelyNames("reram.adc_bits", kSettings), ElementsAre("reram_adc_bits"));
  EXPECT_THAT(LikelyNames("Max-Steps-Per-Epoch", kSettings), ElementsAre("max_steps_per_epoch"));
  // Two names equally near: both.
  EXPECT_THAT(LikelyNames("systolic_cows", kSettings),
              ElementsAre("systolic_rows", "systolic_cols"));
}

TEST(LikelyNamesTest, AWordOfTheNameFindsEveryNameHoldingIt) {
  EXPECT_THAT(LikelyNames("gpu", kSettings),
              ElementsAre("reference_gpu", "gpu_precision", "gpu_baseline"));
  EXPECT_THAT(LikelyNames("steps_per", kSettings), ElementsAre("max_steps_per_epoch"));
  // Part of a word is not a word.
  EXPECT_THAT(LikelyNames("tep", kSettings), IsEmpty());
}

TEST(LikelyNamesTest, NothingCloseOrTheNameItselfSuggestsNothing) {
  EXPECT_THAT(LikelyNames("learning_rate", kSettings), IsEmpty());
  EXPECT_THAT(LikelyNames("gpu_baseline", kSettings), IsEmpty());
  EXPECT_THAT(LikelyNames("", kSettings), IsEmpty());
  EXPECT_EQ(DidYouMean("learning_rate", kSettings), "");
}

TEST(LikelyNamesTest, DidYouMeanNamesOneOrSeveral) {
  EXPECT_EQ(DidYouMean("reram.adc_bits", kSettings), " (did you mean 'reram_adc_bits'?)");
  EXPECT_EQ(DidYouMean("gpu", kSettings),
            " (did you mean one of reference_gpu, gpu_precision, gpu_baseline?)");
  // Past five likely names, a list says more than a guess.
  const std::vector<std::string> many = {"a_x", "b_x", "c_x", "d_x", "e_x", "f_x"};
  EXPECT_EQ(DidYouMean("x", many), "");
}

}  // namespace
}  // namespace hpt
