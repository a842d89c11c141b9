#include "devices/device_flags.h"

#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

// Systolic array (defaults: devices/systolic/systolic_array.h).
ABSL_FLAG(int64_t, systolic_rows, 128, "systolic: PE rows.");
ABSL_FLAG(int64_t, systolic_cols, 128, "systolic: PE columns.");
ABSL_FLAG(std::string, systolic_dataflow, "os", "systolic: os, ws or is.");
ABSL_FLAG(int64_t, systolic_sram_kb, 1024, "systolic: SRAM per operand, KB.");
ABSL_FLAG(int64_t, systolic_ifmap_sram_kb, 0,
          "systolic: input SRAM, KB (0: --systolic_sram_kb).");
ABSL_FLAG(int64_t, systolic_filter_sram_kb, 0,
          "systolic: weight SRAM, KB (0: --systolic_sram_kb).");
ABSL_FLAG(int64_t, systolic_ofmap_sram_kb, 0,
          "systolic: output SRAM, KB (0: --systolic_sram_kb).");
ABSL_FLAG(int64_t, systolic_word_bytes, 0,
          "systolic: bytes per SRAM word for the SRAM sizes (0: the operands'; "
          "SCALE-Sim counts 1-byte words).");
ABSL_FLAG(double, systolic_dram_bw_words_per_cycle, 0,
          "systolic: DRAM bandwidth in words/cycle (0: unlimited, SCALE-Sim CALC).");
ABSL_FLAG(double, systolic_clock_hz, 1e9, "systolic: clock.");
ABSL_FLAG(bool, systolic_bf16, false, "systolic: bf16 operands, fp32 accumulate.");
// ReRAM (defaults: NeuroSim V1.3, devices/reram/reram_config.h).
ABSL_FLAG(int64_t, reram_crossbar_rows, 128, "reram: crossbar rows.");
ABSL_FLAG(int64_t, reram_crossbar_cols, 128, "reram: crossbar columns.");
ABSL_FLAG(int, reram_cell_bits, 2, "reram: bits per cell.");
ABSL_FLAG(int, reram_weight_bits, 8, "reram: weight bits.");
ABSL_FLAG(int, reram_input_bits, 8, "reram: input bits (applied bit-serially).");
ABSL_FLAG(int, reram_adc_bits, 5, "reram: ADC bits.");
ABSL_FLAG(int64_t, reram_cols_per_adc, 8, "reram: columns sharing an ADC.");
ABSL_FLAG(std::string, reram_sign_mode, "offset",
          "reram: offset (NeuroSim V1.3's mapping, 4 cells per 8-bit weight) or "
          "differential (two arrays).");
ABSL_FLAG(std::string, reram_numerics, "fast", "reram: fast or exact (bit-exact).");
ABSL_FLAG(double, reram_endurance, 1e6, "reram: writes a cell survives.");
ABSL_FLAG(double, reram_program_noise, 0, "reram: programming noise, levels.");
ABSL_FLAG(double, reram_read_noise, 0, "reram: read noise, levels.");
ABSL_FLAG(uint64_t, reram_seed, 1, "reram: noise seed.");
ABSL_FLAG(double, reram_clock_hz, 1e9, "reram: node clock (its digital unit's too).");

namespace hpt {

absl::StatusOr<SystolicConfig> SystolicConfigFromFlags() {
  SystolicConfig c;
  c.rows = absl::GetFlag(FLAGS_systolic_rows);
  c.cols = absl::GetFlag(FLAGS_systolic_cols);
  absl::StatusOr<Dataflow> dataflow = ParseDataflow(absl::GetFlag(FLAGS_systolic_dataflow));
  if (!dataflow.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--systolic_", dataflow.status().message()));
  }
  c.dataflow = *dataflow;
  const int64_t sram = absl::GetFlag(FLAGS_systolic_sram_kb);
  auto sram_or = [sram](int64_t kb) { return kb > 0 ? kb : sram; };
  c.ifmap_sram_kb = sram_or(absl::GetFlag(FLAGS_systolic_ifmap_sram_kb));
  c.filter_sram_kb = sram_or(absl::GetFlag(FLAGS_systolic_filter_sram_kb));
  c.ofmap_sram_kb = sram_or(absl::GetFlag(FLAGS_systolic_ofmap_sram_kb));
  c.sram_word_bytes = absl::GetFlag(FLAGS_systolic_word_bytes);
  c.dram_bw_words_per_cycle = absl::GetFlag(FLAGS_systolic_dram_bw_words_per_cycle);
  c.clock_hz = absl::GetFlag(FLAGS_systolic_clock_hz);
  if (absl::GetFlag(FLAGS_systolic_bf16)) c.precision = SystolicPrecision::kBf16;
  if (absl::Status s = ValidateSystolicConfig(c); !s.ok()) return s;
  return c;
}

absl::StatusOr<ReramConfig> ReramConfigFromFlags() {
  ReramConfig c;
  c.crossbar_rows = absl::GetFlag(FLAGS_reram_crossbar_rows);
  c.crossbar_cols = absl::GetFlag(FLAGS_reram_crossbar_cols);
  c.cell_bits = absl::GetFlag(FLAGS_reram_cell_bits);
  c.weight_bits = absl::GetFlag(FLAGS_reram_weight_bits);
  c.input_bits = absl::GetFlag(FLAGS_reram_input_bits);
  c.adc_bits = absl::GetFlag(FLAGS_reram_adc_bits);
  c.cols_per_adc = absl::GetFlag(FLAGS_reram_cols_per_adc);
  const std::string sign = absl::GetFlag(FLAGS_reram_sign_mode);
  if (sign != "differential" && sign != "offset") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--reram_sign_mode must be differential or offset, got '", sign, "'"));
  }
  c.sign_mode = sign == "offset" ? SignMode::kOffset : SignMode::kDifferential;
  const std::string numerics = absl::GetFlag(FLAGS_reram_numerics);
  if (numerics != "fast" && numerics != "exact") {
    return absl::InvalidArgumentError(
        absl::StrCat("--reram_numerics must be fast or exact, got '", numerics, "'"));
  }
  c.numerics = numerics == "exact" ? ReramNumerics::kBitExact : ReramNumerics::kFast;
  c.endurance_writes = absl::GetFlag(FLAGS_reram_endurance);
  c.program_noise_sigma = absl::GetFlag(FLAGS_reram_program_noise);
  c.read_noise_sigma = absl::GetFlag(FLAGS_reram_read_noise);
  c.seed = absl::GetFlag(FLAGS_reram_seed);
  c.clock_hz = absl::GetFlag(FLAGS_reram_clock_hz);
  return c;
}

}  // namespace hpt
