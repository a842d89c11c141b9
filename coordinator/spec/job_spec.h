// Job specs: parsing the text form, filling defaults and validating every
// field, with errors that name the field and value (INVALID_ARGUMENT).
//
//   ASSIGN_OR_RETURN(JobSpec spec, ParseJobSpecText(text));
//   ASSIGN_OR_RETURN(spec, NormalizeJobSpec(spec));
#ifndef HPT_COORDINATOR_SPEC_JOB_SPEC_H_
#define HPT_COORDINATOR_SPEC_JOB_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "coordinator/spec/paper_recipes.h"  // PaperEpochs, PaperWindow
#include "proto/job_service.pb.h"

namespace hpt {

// Parses protobuf text format; errors carry "line L column C".
absl::StatusOr<JobSpec> ParseJobSpecText(const std::string& text);

// A phase controller that passes every check: with 3-step windows, the
// first check closes the third (step 8), the trial lasts one more, and the
// LoRA phase starts at step 12. For runs that measure the LoRA phase's
// costs, not when it converges.
void ForceEarlySwitch(HptSpec* hpt);

// Fills defaults (documented in proto/job_service.proto) and validates.
absl::StatusOr<JobSpec> NormalizeJobSpec(JobSpec spec);

// The note for a full-parameter job given settings of the LoRA phase it
// never reaches, naming them ("" when it is not such a job): `given` as
// submitted (before defaults fill it), `normal` as normalised. NormalizeJobSpec
// leaves it to its caller, since normalising again finds the defaults
// filled in, not given.
std::string IgnoredLoraPhaseNote(const HptSpec& given, const HptSpec& normal);

// The model the job trains, from its preset, overrides and the data's
// feature counts.
absl::StatusOr<ModelConfig> ResolveModelConfig(const ModelSpec& spec,
                                               int64_t input_features,
                                               int64_t output_features);

// A switch rule and the test its trials end with, as one name:
// "<hpt.switch_rule>[+<hpt.trial_test>]", e.g. "plateau+margin"; a name
// without "+" leaves the trial test to its default. The benchmarks' and
// reports' spelling of "which rule". INVALID_ARGUMENT, with the names
// allowed, where either part is not a rule or a test.
absl::Status SetRuleName(const std::string& name, HptSpec& h);
// The name of a normalised spec's rule: "plateau" under the difference
// test, "plateau+margin" under the margin test.
std::string RuleName(const HptSpec& h);

}  // namespace hpt

#endif  // HPT_COORDINATOR_SPEC_JOB_SPEC_H_
