// Configuration of simulated ReRAM crossbars: array geometry, cell and
// converter precision, device electrical parameters and the constants of
// the cost model. Defaults are DNN+NeuroSim V1.3's (Param.cpp at commit
// 388f421, the inference wrapper's 8-bit weights and activations); each
// field cites where it comes from.
//
//   ReramConfig config;             // NeuroSim V1.3 defaults
//   config.adc_bits = 6;            // a what-if
//   RETURN_IF_ERROR(ValidateReramConfig(config));
#ifndef HPT_DEVICES_RERAM_RERAM_CONFIG_H_
#define HPT_DEVICES_RERAM_RERAM_CONFIG_H_

#include <cstdint>

#include "absl/status/status.h"

namespace hpt {

// kOffset stores w + 2^(b-1) in one group of columns and subtracts the
// offset digitally, as NeuroSim V1.3 maps signed weights (Chip.cpp
// LoadInWeightData normalises [-1, 1] onto [0, 2^b]): ceil(b / cell_bits)
// columns per weight. kDifferential stores |w| on a positive and a
// negative array: twice the columns, one bit fewer per magnitude.
enum class SignMode { kDifferential, kOffset };
enum class ReramNumerics { kFast, kBitExact };
// kPerRead: each crossbar read's ADC references span the min..max of that
// read's line sums, as DNN+NeuroSim V1.3's inference wrapper quantises
// partial sums with the tensor's own range (utee/wage_quantizer.py,
// LinearQuantizeOut); we range per crossbar and input vector, and round to
// nearest where NeuroSim floors. kFullScale: a fixed range of rows x max
// level (a what-if; coarse for sparse sums).
enum class AdcRanging { kPerRead, kFullScale };

struct ReramConfig {
  // DNN+NeuroSim V1.3, Inference_pytorch/NeuroSIM/Param.cpp defaults:
  int64_t crossbar_rows = 128;   // numRowSubArray
  int64_t crossbar_cols = 128;   // numColSubArray
  int cell_bits = 2;             // cellBit
  int adc_bits = 5;              // levelOutput = 32
  int64_t cols_per_adc = 8;      // numColMuxed
  double read_voltage_v = 0.5;   // readVoltage
  double read_pulse_s = 10e-9;   // readPulseWidth
  double r_on_ohm = 6e3;         // resistanceOn
  double on_off_ratio = 150;     // resistanceOff = 6e3 * 150
  double write_voltage_v = 2.0;  // writeVoltage
  // NeuroSim V1.3 Inference_pytorch/inference.py: --wl_weight 8, --wl_activate 8.
  int weight_bits = 8;
  int input_bits = 8;
  SignMode sign_mode = SignMode::kOffset;
  AdcRanging adc_ranging = AdcRanging::kPerRead;

  // Writes (NeuroSim V1.3 models inference only): writeVoltage above across
  // a cell at Ron for a pulse as long as the read pulse, with iterative
  // write-verify of write_pulses_per_cell pulses for a multi-level cell
  // (Alibart et al., Nanotechnology 23 (2012) 075201: high-precision tuning
  // by repeated pulses with verify reads).
  double write_pulse_s = 10e-9;
  int write_pulses_per_cell = 4;
  // Endurance: HfOx RRAM typically 1e6 and more (Wong et al., "Metal-Oxide
  // RRAM", Proc. IEEE 100(6), 2012); the conservative end.
  double endurance_writes = 1e6;

  // Noise (0 = off), in units of one conductance level: programming noise
  // is drawn once per written cell; read noise per column sum, scaled by
  // the square root of the rows summed.
  double program_noise_sigma = 0;
  double read_noise_sigma = 0;
  uint64_t seed = 1;
  ReramNumerics numerics = ReramNumerics::kFast;

  // Digital periphery clock (the ReRAM node's element-wise unit). NeuroSim
  // V1.3 Param.cpp clkFreq = 1e9; the crossbar reads themselves run at the
  // sensing-limited clock of reram_cost.h.
  double clock_hz = 1e9;
};

absl::Status ValidateReramConfig(const ReramConfig& config);

// Columns (cells) one weight occupies: ceil(magnitude bits / cell_bits)
// per sign.
int64_t CellsPerWeight(const ReramConfig& config);

}  // namespace hpt

#endif  // HPT_DEVICES_RERAM_RERAM_CONFIG_H_
