#include "devices/reram/reram_config.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace hpt {

absl::Status ValidateReramConfig(const ReramConfig& c) {
  auto bad = [](const std::string& m) { return absl::InvalidArgumentError(m); };
  if (c.crossbar_rows < 2 || c.crossbar_cols < 2) {
    return bad(absl::StrCat("reram crossbar size must be at least 2 x 2, got ",
                            c.crossbar_rows, " x ", c.crossbar_cols));
  }
  if (c.cell_bits < 1 || c.cell_bits > 8) {
    return bad(absl::StrCat("reram cell_bits must be in 1..8, got ", c.cell_bits));
  }
  if (c.weight_bits < 2 || c.weight_bits > 16) {
    return bad(absl::StrCat("reram weight_bits must be in 2..16, got ", c.weight_bits));
  }
  if (c.input_bits < 2 || c.input_bits > 16) {
    return bad(absl::StrCat("reram input_bits must be in 2..16, got ", c.input_bits));
  }
  if (c.adc_bits < 1 || c.adc_bits > 16) {
    return bad(absl::StrCat("reram adc_bits must be in 1..16, got ", c.adc_bits));
  }
  if (c.cols_per_adc < 1) {
    return bad(absl::StrCat("reram cols_per_adc must be positive, got ", c.cols_per_adc));
  }
  if (!(c.endurance_writes >= 1)) {
    return bad(absl::StrCat("reram endurance_writes must be at least 1, got ",
                            c.endurance_writes));
  }
  if (c.program_noise_sigma < 0 || c.read_noise_sigma < 0) {
    return bad("reram noise sigmas must not be negative");
  }
  if (!(c.on_off_ratio > 1) || !(c.r_on_ohm > 0)) {
    return bad("reram r_on_ohm must be positive and on_off_ratio above 1");
  }
  if (!(c.clock_hz > 0)) return bad("reram clock_hz must be positive");
  return absl::OkStatus();
}

int64_t CellsPerWeight(const ReramConfig& c) {
  const int magnitude_bits =
      c.sign_mode == SignMode::kDifferential ? c.weight_bits - 1 : c.weight_bits;
  const int64_t slices = (magnitude_bits + c.cell_bits - 1) / c.cell_bits;
  return c.sign_mode == SignMode::kDifferential ? 2 * slices : slices;
}

}  // namespace hpt
