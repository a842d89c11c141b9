#include "common/cost_phase.h"

#include <set>

#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(CostPhaseTest, EveryPhaseIsListedOnceUnderItsName) {
  std::set<std::string> names;
  for (CostPhase::Name p : kCostPhases) names.insert(CostPhaseName(p));
  EXPECT_EQ(names, (std::set<std::string>{"full", "partial", "switch", "lora", "lora_gpu",
                                          "recovery", "off_step"}));
  // The list holds every value the enum has, but the unspecified one.
  EXPECT_EQ(std::size(kCostPhases), size_t(CostPhase::Name_ARRAYSIZE - 1));
}

TEST(CostPhaseTest, AnUnspecifiedOrUnknownPhaseHasNoName) {
  EXPECT_EQ(CostPhaseName(CostPhase::COST_PHASE_UNSPECIFIED), "");
  EXPECT_EQ(CostPhaseName(CostPhase::Name(99)), "");
}

TEST(CostPhaseTest, OnlyStepsThatTrainAreTrainingSteps) {
  for (CostPhase::Name p :
       {CostPhase::full, CostPhase::partial, CostPhase::lora, CostPhase::lora_gpu}) {
    EXPECT_TRUE(IsTrainingStep(p)) << CostPhaseName(p);
  }
  for (CostPhase::Name p : {CostPhase::switch_, CostPhase::recovery, CostPhase::off_step,
                            CostPhase::COST_PHASE_UNSPECIFIED}) {
    EXPECT_FALSE(IsTrainingStep(p)) << CostPhaseName(p);
  }
}

}  // namespace
}  // namespace hpt
