#include "common/device_kind.h"

#include "absl/strings/str_cat.h"
#include "common/enum_names.h"

namespace hpt {

const std::string& KindName(DeviceKind::Name kind) {
  static const std::string* const kNone = new std::string();
  if (kind == DeviceKind::DEVICE_KIND_UNSPECIFIED || !DeviceKind::Name_IsValid(kind)) return *kNone;
  return DeviceKind::Name_Name(kind);
}

absl::StatusOr<DeviceKind::Name> ParseDeviceKind(const std::string& field,
                                                 const std::string& name) {
  DeviceKind::Name kind = DeviceKind::DEVICE_KIND_UNSPECIFIED;
  absl::Status s = ParseEnumName(field, name, &kind);
  if (!s.ok()) return s;
  return kind;
}

absl::Status CheckWorkerKind(DeviceKind::Name kind) {
  if (!KindName(kind).empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("a worker needs a kind: ", AllowedNames(DeviceKind::Name_descriptor())));
}

}  // namespace hpt
