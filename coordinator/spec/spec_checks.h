// The checks a job spec's normalisation makes of its fields, each error
// INVALID_ARGUMENT naming the field: shared by job_spec.cc and hpt_spec.cc.
#ifndef HPT_COORDINATOR_SPEC_SPEC_CHECKS_H_
#define HPT_COORDINATOR_SPEC_SPEC_CHECKS_H_

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/enum_names.h"
#include "google/protobuf/descriptor.h"

namespace hpt {

// "FIELD WHY" as INVALID_ARGUMENT.
inline absl::Status Invalid(const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(field, " ", why));
}

// An enum field's value must be one of its type's names (a binary spec can
// carry any number).
inline absl::Status CheckEnum(const std::string& field, int value,
                       const google::protobuf::EnumDescriptor* type) {
  if (type->FindValueByNumber(value) != nullptr) return absl::OkStatus();
  return Invalid(field, absl::StrCat(value, " is not ", AllowedNames(type)));
}

// A number that must be finite and within [lowest, highest].
inline absl::Status CheckRange(const std::string& field, double value, double lowest,
                        double highest) {
  if (std::isfinite(value) && value >= lowest && value <= highest) return absl::OkStatus();
  return Invalid(field, absl::StrCat("must be a number in [", lowest, ", ", highest, "], got ",
                                     value));
}

}  // namespace hpt

#endif  // HPT_COORDINATOR_SPEC_SPEC_CHECKS_H_
