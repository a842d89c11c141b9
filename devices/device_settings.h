// Every setting of a simulated device, declared once. Each line gives the
// worker flag (--systolic_rows: hpt_worker, hpt_devsim; device_flags.cc)
// and the cost setting of the same name (`hptctl whatif --set
// systolic_rows=64`; cost_settings.cc) their type, the kinds of worker it
// applies to, whether it changes numerics, its help and where it lives in
// DeviceCostConfig. A flag's default is that field's default in the device
// config (systolic_array.h, reram_config.h), where its source is cited.
//
// HPT_NUMBER_SETTINGS(X): X(type, name, applies, field, lo, hi, numerics, help)
//   a number in [lo, hi] stored in config->field, recorded in a task's
//   settings.
// HPT_OTHER_SETTINGS(X): X(type, name, applies, flag_default, numerics,
//   takes_number, help): parsed and written by Set_<name> and Get_<name> in
//   cost_settings.cc (a null Get_: not recorded in a task's settings, as
//   for settings of numerics alone).
//
// `applies` is a SettingScope: kDeviceNodes (ReRAM and systolic workers)
// or kReramNodes. The GPU's settings (reference_gpu, gpu_precision) are
// the GPU worker's own flags and live in cost_settings.cc alone.
#ifndef HPT_DEVICES_DEVICE_SETTINGS_H_
#define HPT_DEVICES_DEVICE_SETTINGS_H_

#define HPT_NUMBER_SETTINGS(X)                                                                   \
  X(int64_t, systolic_rows, kDeviceNodes, systolic.rows, 1, 1 << 16, false,                      \
    "systolic array PE rows")                                                                    \
  X(int64_t, systolic_cols, kDeviceNodes, systolic.cols, 1, 1 << 16, false,                      \
    "systolic array PE columns (also the vector lanes)")                                         \
  X(int64_t, systolic_word_bytes, kDeviceNodes, systolic.sram_word_bytes, 0, 8, false,           \
    "bytes per SRAM word for the SRAM sizes (0: the operands'; SCALE-Sim counts 1-byte words)")  \
  X(double, systolic_dram_bw_words_per_cycle, kDeviceNodes, systolic.dram_bw_words_per_cycle, 0, \
    1 << 20, false, "DRAM words a cycle per operand (0: unlimited, SCALE-Sim CALC)")             \
  X(double, systolic_clock_hz, kDeviceNodes, systolic.clock_hz, 1e3, 1e12, false,                \
    "systolic array clock, Hz")                                                                  \
  X(int64_t, reram_crossbar_rows, kReramNodes, reram.crossbar_rows, 8, 4096, true,               \
    "ReRAM crossbar rows (the ADC's full scale follows)")                                        \
  X(int64_t, reram_crossbar_cols, kReramNodes, reram.crossbar_cols, 8, 4096, true,               \
    "ReRAM crossbar columns")                                                                    \
  X(int, reram_cell_bits, kReramNodes, reram.cell_bits, 1, 8, true, "ReRAM bits per cell")       \
  X(int, reram_weight_bits, kReramNodes, reram.weight_bits, 2, 16, true, "ReRAM weight bits")    \
  X(int, reram_input_bits, kReramNodes, reram.input_bits, 1, 16, true,                           \
    "ReRAM input bits, applied bit-serially")                                                    \
  X(int, reram_adc_bits, kReramNodes, reram.adc_bits, 1, 16, true, "ReRAM ADC bits")             \
  X(int64_t, reram_cols_per_adc, kReramNodes, reram.cols_per_adc, 1, 4096, false,                \
    "ReRAM columns sharing one ADC")                                                             \
  X(double, reram_clock_hz, kReramNodes, reram.clock_hz, 1e3, 1e12, false,                       \
    "ReRAM node clock, Hz (its digital unit's too)")

// The per-operand SRAMs follow systolic_sram_kb, which sets all three.
#define HPT_OTHER_SETTINGS(X)                                                                      \
  X(std::string, systolic_dataflow, kDeviceNodes,                                                  \
    hpt::DataflowName(hpt::SystolicConfig().dataflow), false, false,                               \
    "systolic dataflow: os, ws or is")                                                             \
  X(int64_t, systolic_sram_kb, kDeviceNodes, hpt::SystolicConfig().ifmap_sram_kb, false, true,     \
    "systolic SRAMs, KB each (all three)")                                                         \
  X(int64_t, systolic_ifmap_sram_kb, kDeviceNodes, 0, false, true,                                 \
    "systolic input SRAM, KB (0: systolic_sram_kb's)")                                             \
  X(int64_t, systolic_filter_sram_kb, kDeviceNodes, 0, false, true,                                \
    "systolic weight SRAM, KB (0: systolic_sram_kb's)")                                            \
  X(int64_t, systolic_ofmap_sram_kb, kDeviceNodes, 0, false, true,                                 \
    "systolic output SRAM, KB (0: systolic_sram_kb's)")                                            \
  X(bool, systolic_bf16, kDeviceNodes, false, true, false,                                         \
    "systolic: bf16 operands, fp32 accumulation")                                                  \
  X(std::string, reram_sign_mode, kReramNodes, hpt::SignModeName(hpt::ReramConfig().sign_mode),    \
    true, false,                                                                                   \
    "ReRAM signed weights: offset (NeuroSim V1.3's mapping, 4 cells per 8-bit weight) or "         \
    "differential (two arrays)")                                                                   \
  X(std::string, reram_numerics, kReramNodes, hpt::ReramNumericsName(hpt::ReramConfig().numerics), \
    true, false, "ReRAM read: fast or exact (bit-exact, slow)")                                    \
  X(double, reram_endurance, kReramNodes, hpt::ReramConfig().endurance_writes, false, true,        \
    "ReRAM writes a cell survives (the wear report)")                                              \
  X(double, reram_program_noise, kReramNodes, hpt::ReramConfig().program_noise_sigma, true, true,  \
    "ReRAM programming noise, levels (numerics only)")                                             \
  X(double, reram_read_noise, kReramNodes, hpt::ReramConfig().read_noise_sigma, true, true,        \
    "ReRAM read noise, levels (numerics only)")                                                    \
  X(uint64_t, reram_seed, kReramNodes, hpt::ReramConfig().seed, true, false,                       \
    "ReRAM noise seed (numerics only)")

#endif  // HPT_DEVICES_DEVICE_SETTINGS_H_
