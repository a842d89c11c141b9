// The simulated devices' command-line flags, defined once for every binary
// that builds a device from flags (hpt_worker, hpt_devsim): --systolic_*
// for the systolic array, --reram_* for the ReRAM crossbars. Each is a line
// of device_settings.h, read by the cost setting of its name, so a flag and
// `hptctl whatif --set` parse, check and mean the same. The defaults are
// the device configs' own (systolic_array.h, reram_config.h), whose sources
// are cited there.
//
// Flags normally live beside main() (docs/STYLE habit 7); these are shared
// so that two binaries cannot drift apart in names or defaults again.
//
//   absl::ParseCommandLine(argc, argv);
//   ASSIGN_OR_RETURN(SystolicConfig systolic, SystolicConfigFromFlags());
//   ASSIGN_OR_RETURN(ReramConfig reram, ReramConfigFromFlags());
#ifndef HPT_DEVICES_DEVICE_FLAGS_H_
#define HPT_DEVICES_DEVICE_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "devices/device_settings.h"
#include "devices/reram/reram_config.h"
#include "devices/systolic/systolic_array.h"

// Declared for the binaries that read one directly (hpt_devsim's
// reram_clock_hz); every one is a line of device_settings.h.
#define HPT_DECLARE_DEVICE_FLAG(type, name, ...) ABSL_DECLARE_FLAG(type, name);
HPT_NUMBER_SETTINGS(HPT_DECLARE_DEVICE_FLAG)
HPT_OTHER_SETTINGS(HPT_DECLARE_DEVICE_FLAG)
#undef HPT_DECLARE_DEVICE_FLAG

namespace hpt {

// The systolic array the --systolic_* flags describe; INVALID_ARGUMENT
// naming the flag for a bad value.
absl::StatusOr<SystolicConfig> SystolicConfigFromFlags();
// The ReRAM crossbars the --reram_* flags describe; likewise.
absl::StatusOr<ReramConfig> ReramConfigFromFlags();

}  // namespace hpt

#endif  // HPT_DEVICES_DEVICE_FLAGS_H_
