// hptctl submit's flags against the spec's one table of defaults
// (coordinator/spec/hpt_defaults.h): each rule's help states the default
// the normaliser fills in, and a rule or test name that is not one is
// refused with the names allowed.
#include "hptctl/submit_flags.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "coordinator/spec/hpt_defaults.h"
#include "gtest/gtest.h"

ABSL_DECLARE_FLAG(std::string, switch_rule);
ABSL_DECLARE_FLAG(std::string, mode);
ABSL_DECLARE_FLAG(std::string, trial_test);
ABSL_DECLARE_FLAG(std::string, precision);
ABSL_DECLARE_FLAG(std::string, csv);
ABSL_DECLARE_FLAG(std::string, embedding_skip);
// hptctl_main.cc defines it; submit reads it.
ABSL_FLAG(std::string, target, "", "the coordinator (unused here)");

namespace hpt {
namespace {

std::string Help(const char* flag) {
  const absl::CommandLineFlag* f = absl::FindCommandLineFlag(flag);
  return f == nullptr ? "" : f->Help();
}

TEST(SubmitFlagsTest, HelpStatesTheSpecsDefaults) {
  EXPECT_NE(
      Help("switch_rule")
          .find(absl::StrCat("the default, ", SwitchRule::Name_Name(kDefaultSwitchRule), ";")),
      std::string::npos)
      << Help("switch_rule");
  EXPECT_NE(Help("trial_test")
                .find(absl::StrCat("(empty: ", TrialTest::Name_Name(kNamedRuleTrialTest), ";")),
            std::string::npos)
      << Help("trial_test");
  EXPECT_NE(Help("consecutive_checks").find(absl::StrCat("(0: ", kDefaultConsecutiveChecks, ")")),
            std::string::npos);
  EXPECT_NE(Help("trend_windows").find(absl::StrCat("(0: ", kDefaultTrendWindows, ")")),
            std::string::npos);
  EXPECT_NE(Help("trend_gain").find(absl::StrCat("(0: ", kDefaultTrendGain, ")")),
            std::string::npos);
  EXPECT_NE(Help("plateau_z").find(absl::StrCat("(0: ", kDefaultPlateauZ, ")")), std::string::npos);
  EXPECT_NE(Help("trial_margin").find(absl::StrCat("(0: ", kDefaultTrialMargin, ")")),
            std::string::npos);
}

TEST(SubmitFlagsTest, RuleAndTestNamesAreTheSpecsEnums) {
  absl::SetFlag(&FLAGS_switch_rule, "plateau");
  absl::SetFlag(&FLAGS_trial_test, "none");
  absl::StatusOr<SubmitJobRequest> ok = BuildSubmit();
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->spec().hpt().switch_rule(), SwitchRule::plateau);
  EXPECT_EQ(ok->spec().hpt().trial_test(), TrialTest::none);
  absl::SetFlag(&FLAGS_switch_rule, "knee");
  absl::StatusOr<SubmitJobRequest> bad = BuildSubmit();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--switch_rule 'knee' is not paper, consecutive, trend, plateau or layerwise");
  absl::SetFlag(&FLAGS_switch_rule, "");
  absl::SetFlag(&FLAGS_trial_test, "SWITCH_RULE_UNSPECIFIED");
  bad = BuildSubmit();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--trial_test 'SWITCH_RULE_UNSPECIFIED' is not difference, margin or none");
  absl::SetFlag(&FLAGS_trial_test, "");  // the flags are global: leave them unset
}

TEST(SubmitFlagsTest, ModeIsTheSpecsEnum) {
  absl::SetFlag(&FLAGS_mode, "full");
  absl::StatusOr<SubmitJobRequest> full = BuildSubmit();
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->spec().hpt().mode(), TrainingMode::full);
  // Unset: the spec's default, chosen where the spec is normalised.
  absl::SetFlag(&FLAGS_mode, "");
  absl::StatusOr<SubmitJobRequest> unset = BuildSubmit();
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(unset->spec().hpt().mode(), TrainingMode::TRAINING_MODE_UNSPECIFIED);
  absl::SetFlag(&FLAGS_mode, "lora");
  absl::StatusOr<SubmitJobRequest> bad = BuildSubmit();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--mode 'lora' is not hpt or full");
  absl::SetFlag(&FLAGS_mode, "");
}

// A data path is the user's: relative to where they stand, and a tilde
// the shell left after '=' is their home.
TEST(SubmitFlagsTest, DataPathsAreMadeAbsoluteAsTheUserMeansThem) {
  const std::string home = "/home/scientist";
  setenv("HOME", home.c_str(), 1);
  absl::SetFlag(&FLAGS_csv, "~/data/w.csv");
  absl::StatusOr<SubmitJobRequest> tilde = BuildSubmit();
  ASSERT_TRUE(tilde.ok()) << tilde.status();
  EXPECT_EQ(tilde->spec().data().csv().path(), "/home/scientist/data/w.csv");
  absl::SetFlag(&FLAGS_csv, "data/../w.csv");
  absl::StatusOr<SubmitJobRequest> relative = BuildSubmit();
  ASSERT_TRUE(relative.ok()) << relative.status();
  EXPECT_EQ(relative->spec().data().csv().path(),
            (std::filesystem::current_path() / "w.csv").string());
  absl::SetFlag(&FLAGS_csv, "");
}

TEST(SubmitFlagsTest, PrecisionIsTheSpecsEnum) {
  absl::SetFlag(&FLAGS_precision, "bf16");
  absl::StatusOr<SubmitJobRequest> bf16 = BuildSubmit();
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(bf16->spec().training().precision(), Precision::bf16);
  absl::SetFlag(&FLAGS_precision, "");
  absl::StatusOr<SubmitJobRequest> unset = BuildSubmit();
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(unset->spec().training().precision(), Precision::PRECISION_UNSPECIFIED);
  absl::SetFlag(&FLAGS_precision, "fp16");
  absl::StatusOr<SubmitJobRequest> bad = BuildSubmit();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--precision 'fp16' is not fp32 or bf16");
  absl::SetFlag(&FLAGS_precision, "");
}

TEST(SubmitFlagsTest, EmbeddingSkipIsTheSpecsEnum) {
  absl::StatusOr<SubmitJobRequest> unset = BuildSubmit();
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(unset->spec().model().embedding_skip(), EmbeddingSkip::EMBEDDING_SKIP_UNSPECIFIED);
  absl::SetFlag(&FLAGS_embedding_skip, "off");
  absl::StatusOr<SubmitJobRequest> off = BuildSubmit();
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->spec().model().embedding_skip(), EmbeddingSkip::off);
  absl::SetFlag(&FLAGS_embedding_skip, "false");
  absl::StatusOr<SubmitJobRequest> bad = BuildSubmit();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--embedding_skip 'false' is not on or off");
  absl::SetFlag(&FLAGS_embedding_skip, "");
}

}  // namespace
}  // namespace hpt
