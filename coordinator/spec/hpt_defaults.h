// The switch's defaults and the LoRA phase's fallback, written once: the
// spec's normaliser fills them in (hpt_spec.cc), the phase controller
// starts from them (coordinator/training/phase_controller.h), and hptctl's
// help states them (a test holds the help to these values).
#ifndef HPT_COORDINATOR_SPEC_HPT_DEFAULTS_H_
#define HPT_COORDINATOR_SPEC_HPT_DEFAULTS_H_

#include "proto/job_service.pb.h"

namespace hpt {

// The rule and trial test a job gets when it names neither, by the
// criterion docs/method.md states ("Choosing the default"): no rule
// qualified on the frontier's seeds 42-51, so the paper's rule and trial
// stay. A job that names a rule but no trial test gets kNamedRuleTrialTest.
inline constexpr SwitchRule::Name kDefaultSwitchRule = SwitchRule::paper;
inline constexpr TrialTest::Name kDefaultTrialTest = TrialTest::difference;
inline constexpr TrialTest::Name kNamedRuleTrialTest = TrialTest::difference;

// Where a LoRA phase goes when its devices are gone.
inline constexpr FallbackPlacement::Name kDefaultFallbackPlacement = FallbackPlacement::gpu;

// Each rule's parameter where the spec leaves it 0.
inline constexpr int kDefaultConsecutiveChecks = 3;  // consecutive
inline constexpr int kDefaultTrendWindows = 5;       // trend
inline constexpr double kDefaultTrendGain = 0.01;    // trend
inline constexpr double kDefaultPlateauZ = 1.645;    // plateau: one-sided 5 %
inline constexpr double kDefaultTrialMargin = 0.05;  // the margin trial

}  // namespace hpt

#endif  // HPT_COORDINATOR_SPEC_HPT_DEFAULTS_H_
