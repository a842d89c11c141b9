// The hpt section of a job spec, normalised: the phase controller's window,
// tests and switch rule, the adapter, the LoRA phase's placement and
// fallback, the interconnect, and the projection. Part of NormalizeJobSpec
// (job_spec.h), apart because it is most of it.
#ifndef HPT_COORDINATOR_SPEC_HPT_SPEC_H_
#define HPT_COORDINATOR_SPEC_HPT_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/common.pb.h"
#include "proto/job_service.pb.h"

namespace hpt {

// Fills `h`'s defaults (the paper's, or the preset's recipe) and checks
// every field; `model`, `training` and `placement` are normalised already.
// `notes`: what it chose that the user should hear of (a check window
// rounded up), appended.
absl::Status NormalizeHpt(HptSpec& h, const ModelSpec& model, const ModelConfig& preset,
                          const TrainingSpec& training, const PlacementSpec& placement,
                          std::vector<std::string>* notes);

}  // namespace hpt

#endif  // HPT_COORDINATOR_SPEC_HPT_SPEC_H_
