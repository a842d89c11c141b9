#include "devices/device_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/marshalling.h"
#include "common/status_macros.h"
#include "devices/cost_settings.h"
#include "devices/device_settings.h"

// One flag per line of device_settings.h, its default the device config's.
#define HPT_NUMBER_FLAG(type, name, applies, field, lo, hi, numerics, help) \
  ABSL_FLAG(type, name, hpt::DeviceCostConfig().field, help);
HPT_NUMBER_SETTINGS(HPT_NUMBER_FLAG)
#undef HPT_NUMBER_FLAG
#define HPT_OTHER_FLAG(type, name, applies, flag_default, numerics, takes_number, help) \
  ABSL_FLAG(type, name, flag_default, help);
HPT_OTHER_SETTINGS(HPT_OTHER_FLAG)
#undef HPT_OTHER_FLAG

namespace hpt {
namespace {

// A worker of `kind`'s device as its flags set it, each flag read by the
// cost setting of its name (in device_settings.h's order, so the
// per-operand SRAMs follow --systolic_sram_kb).
absl::StatusOr<DeviceCostConfig> DeviceConfigFromFlags(DeviceKind::Name kind) {
  DeviceCostConfig c = DefaultDeviceCostConfig(kind);
#define HPT_APPLY_FLAG(type, name, ...) \
  RETURN_IF_ERROR(ApplyDeviceFlag(#name, absl::UnparseFlag(absl::GetFlag(FLAGS_##name)), &c));
  HPT_NUMBER_SETTINGS(HPT_APPLY_FLAG)
  HPT_OTHER_SETTINGS(HPT_APPLY_FLAG)
#undef HPT_APPLY_FLAG
  return c;
}

}  // namespace

absl::StatusOr<SystolicConfig> SystolicConfigFromFlags() {
  absl::StatusOr<DeviceCostConfig> c = DeviceConfigFromFlags(DeviceKind::systolic);
  if (!c.ok()) return c.status();
  if (absl::Status s = ValidateSystolicConfig(c->systolic); !s.ok()) return s;
  return c->systolic;
}

absl::StatusOr<ReramConfig> ReramConfigFromFlags() {
  absl::StatusOr<DeviceCostConfig> c = DeviceConfigFromFlags(DeviceKind::reram);
  if (!c.ok()) return c.status();
  return c->reram;
}

}  // namespace hpt
