#include "common/training_phase.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(TrainingPhaseTest, EachPhaseHasItsLowerCaseName) {
  std::vector<std::string> names;
  for (TrainingPhase::Name p : kTrainingPhases) names.push_back(PhaseName(p));
  EXPECT_EQ(names, (std::vector<std::string>{"full", "trial", "lora"}));
}

TEST(TrainingPhaseTest, AJobNotStartedIsInTheFullPhase) {
  EXPECT_EQ(PhaseOrFull(TrainingPhase::TRAINING_PHASE_UNSPECIFIED), TrainingPhase::full);
  EXPECT_EQ(PhaseName(TrainingPhase::TRAINING_PHASE_UNSPECIFIED), "full");
  EXPECT_EQ(PhaseOrFull(TrainingPhase::Name(99)), TrainingPhase::full);
  EXPECT_EQ(PhaseOrFull(TrainingPhase::lora), TrainingPhase::lora);
}

TEST(TrainingPhaseTest, TheListHoldsEveryPhaseTheProtocolNames) {
  const auto* type = TrainingPhase::Name_descriptor();
  // Every value but the unspecified one, in the protocol's order.
  ASSERT_EQ(std::size(kTrainingPhases), size_t(type->value_count() - 1));
  for (size_t i = 0; i < std::size(kTrainingPhases); ++i) {
    EXPECT_EQ(kTrainingPhases[i], type->value(int(i) + 1)->number());
  }
}

}  // namespace
}  // namespace hpt
