// Cost settings: a device's cost configuration as named values, the same
// names as the worker flags that set them (without "--"), so that
// `hptctl whatif --set systolic_rows=64` means what starting every worker
// with --systolic_rows=64 means (docs/cost-model.md, "What if").
//
//   DeviceCostConfig c = DefaultDeviceCostConfig(DeviceKind::systolic);
//   RETURN_IF_ERROR(ApplyDeviceSetting("systolic_rows", "64", &c));
//   std::map<std::string, std::string> s = DeviceSettingsOf(c);  // back
//
// A worker reports its settings with every task (proto/work.proto); the
// coordinator re-costs recorded work from them.
#ifndef HPT_DEVICES_COST_SETTINGS_H_
#define HPT_DEVICES_COST_SETTINGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/gpu/kernel_cost.h"
#include "devices/gpu/roofline.h"
#include "devices/reram/reram_config.h"
#include "devices/systolic/systolic_array.h"
#include "devices/vector_unit.h"
#include "proto/work.pb.h"

namespace hpt {

// What a device's costs depend on. GPU workers use gpu and gpu_precision;
// device nodes (ReRAM, systolic) the systolic array (a ReRAM node's
// digital unit is one at the ReRAM clock) and, on ReRAM nodes, reram.
struct DeviceCostConfig {
  DeviceKind::Name kind = DeviceKind::DEVICE_KIND_UNSPECIFIED;
  GpuSpec gpu;
  GpuPrecision gpu_precision = GpuPrecision::kFp32;
  SystolicConfig systolic;
  ReramConfig reram;
  double elementwise_energy_j = kElementwiseOpEnergyJ;  // devices/vector_unit.h
};

// The defaults a worker of `kind` starts with (the configs' own, cited
// where they are defined).
DeviceCostConfig DefaultDeviceCostConfig(DeviceKind::Name kind);

// One setting a whatif may change. The device nodes' settings are declared
// once, in device_settings.h, with the worker flags of the same names.
struct CostSettingInfo {
  std::string key;
  std::string help;
  // True where the value changes numerics (a re-run trains differently):
  // costed, and flagged "cost only: quality needs a re-run".
  bool changes_numerics = false;
  bool takes_number = true;  // sweeps may search it
};

// Every device setting (GPU, systolic, ReRAM), in a stable order.
const std::vector<CostSettingInfo>& DeviceCostSettings();
// Every coordinator setting: reram_chip_tiles, interconnect_*,
// gpu_baseline.
const std::vector<CostSettingInfo>& CoordinatorCostSettings();
// The setting named `key` among both lists; nullptr when unknown.
const CostSettingInfo* FindCostSetting(const std::string& key);

// Sets `key` to `value` on `config`. INVALID_ARGUMENT naming the key for an
// unknown key (NOT_FOUND when it is a coordinator setting) or a bad value.
// A key of another kind's device (reram_* on a GPU worker) is ignored.
absl::Status ApplyDeviceSetting(const std::string& key, const std::string& value,
                                DeviceCostConfig* config);

// Sets the setting `name` as the worker flag --name does: errors name the
// flag. A setting of another kind's device is ignored.
absl::Status ApplyDeviceFlag(const std::string& name, const std::string& value,
                             DeviceCostConfig* config);

// The settings' names for the ReRAM's enums.
std::string SignModeName(SignMode mode);                // offset, differential
std::string ReramNumericsName(ReramNumerics numerics);  // fast, exact

// The settings that describe `config` fully (doubles to 17 digits, so the
// round trip is exact).
std::map<std::string, std::string> DeviceSettingsOf(const DeviceCostConfig& config);

// A worker's config from its recorded settings.
absl::StatusOr<DeviceCostConfig> DeviceCostConfigFrom(
    DeviceKind::Name kind, const std::map<std::string, std::string>& settings);

// A number as settings write it: shortest exact round trip.
std::string SettingNumber(double value);

}  // namespace hpt

#endif  // HPT_DEVICES_COST_SETTINGS_H_
