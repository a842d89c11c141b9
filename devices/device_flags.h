// The simulated devices' command-line flags, defined once for every binary
// that builds a device from flags (hpt_worker, hpt_devsim): --systolic_*
// for the systolic array, --reram_* for the ReRAM crossbars. The defaults
// are the device configs' own (systolic_array.h, reram_config.h), whose
// sources are cited there.
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
#include "devices/reram/reram_config.h"
#include "devices/systolic/systolic_array.h"

ABSL_DECLARE_FLAG(int64_t, systolic_rows);
ABSL_DECLARE_FLAG(int64_t, systolic_cols);
ABSL_DECLARE_FLAG(std::string, systolic_dataflow);
ABSL_DECLARE_FLAG(int64_t, systolic_sram_kb);
ABSL_DECLARE_FLAG(int64_t, systolic_ifmap_sram_kb);
ABSL_DECLARE_FLAG(int64_t, systolic_filter_sram_kb);
ABSL_DECLARE_FLAG(int64_t, systolic_ofmap_sram_kb);
ABSL_DECLARE_FLAG(int64_t, systolic_word_bytes);
ABSL_DECLARE_FLAG(double, systolic_dram_bw_words_per_cycle);
ABSL_DECLARE_FLAG(double, systolic_clock_hz);
ABSL_DECLARE_FLAG(bool, systolic_bf16);
ABSL_DECLARE_FLAG(int64_t, reram_crossbar_rows);
ABSL_DECLARE_FLAG(int64_t, reram_crossbar_cols);
ABSL_DECLARE_FLAG(int, reram_cell_bits);
ABSL_DECLARE_FLAG(int, reram_weight_bits);
ABSL_DECLARE_FLAG(int, reram_input_bits);
ABSL_DECLARE_FLAG(int, reram_adc_bits);
ABSL_DECLARE_FLAG(int64_t, reram_cols_per_adc);
ABSL_DECLARE_FLAG(std::string, reram_sign_mode);
ABSL_DECLARE_FLAG(std::string, reram_numerics);
ABSL_DECLARE_FLAG(double, reram_endurance);
ABSL_DECLARE_FLAG(double, reram_program_noise);
ABSL_DECLARE_FLAG(double, reram_read_noise);
ABSL_DECLARE_FLAG(uint64_t, reram_seed);
ABSL_DECLARE_FLAG(double, reram_clock_hz);

namespace hpt {

// The systolic array the --systolic_* flags describe; INVALID_ARGUMENT
// naming the flag for a bad value.
absl::StatusOr<SystolicConfig> SystolicConfigFromFlags();
// The ReRAM crossbars the --reram_* flags describe; likewise.
absl::StatusOr<ReramConfig> ReramConfigFromFlags();

}  // namespace hpt

#endif  // HPT_DEVICES_DEVICE_FLAGS_H_
