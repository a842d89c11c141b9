// A closed set's values by name: the protocol's enums (proto/*.proto)
// as a flag, a rule name or a text spec spells them, with one error that
// names the field and every value it takes. A value named *_UNSPECIFIED
// means "the default" and is never spelled.
//
//   SwitchRule::Name rule;
//   RETURN_IF_ERROR(ParseEnumName("--switch_rule", "plateau", &rule));
#ifndef HPT_COMMON_ENUM_NAMES_H_
#define HPT_COMMON_ENUM_NAMES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"

namespace hpt {

// Whether `value` is a name a user may spell: not *_UNSPECIFIED.
inline bool Spellable(const google::protobuf::EnumValueDescriptor* value) {
  return !absl::EndsWith(value->name(), "_UNSPECIFIED");
}

// "a, b or c": alternatives as an error lists them.
inline std::string JoinAlternatives(std::vector<std::string> names) {
  if (names.size() < 2) return absl::StrJoin(names, "");
  const std::string last = names.back();
  names.pop_back();
  return absl::StrCat(absl::StrJoin(names, ", "), " or ", last);
}

// "a, b or c": the names a value of `type` may take (the default aside).
inline std::string AllowedNames(const google::protobuf::EnumDescriptor* type) {
  std::vector<std::string> names;
  for (int i = 0; i < type->value_count(); ++i) {
    if (Spellable(type->value(i))) names.push_back(type->value(i)->name());
  }
  return JoinAlternatives(std::move(names));
}

// `name` as a value of `type`; INVALID_ARGUMENT naming `field` and the
// allowed names where it is none of them.
inline absl::Status ParseEnumName(const std::string& field, const std::string& name,
                                  const google::protobuf::EnumDescriptor* type, int* out) {
  const google::protobuf::EnumValueDescriptor* found = type->FindValueByName(name);
  if (found != nullptr && Spellable(found)) {
    *out = found->number();
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " '", name, "' is not ", AllowedNames(type)));
}

template <typename E>
absl::Status ParseEnumName(const std::string& field, const std::string& name, E* out) {
  int value = 0;
  absl::Status s = ParseEnumName(field, name, google::protobuf::GetEnumDescriptor<E>(), &value);
  if (s.ok()) *out = E(value);
  return s;
}

}  // namespace hpt

#endif  // HPT_COMMON_ENUM_NAMES_H_
