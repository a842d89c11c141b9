// A weight matrix programmed into ReRAM crossbars, and the two reads
// training needs: forward y = x W and the transposed read g_x = g W^T.
//
// Mapping: W is K x N (K inputs on crossbar rows, N outputs on columns).
// Weights are quantised to weight_bits (symmetric, per layer). Signed
// weights are either a differential pair (magnitude on a positive and a
// negative array) or an offset (w + 2^(b-1), corrected digitally). Each
// magnitude is sliced into cells of cell_bits, one crossbar column group
// per slice and sign, so a crossbar holds one slice of up to rows x cols
// weights. Inputs are quantised to input_bits and applied bit-serially
// (two's complement bit-planes); every column (row, for the transposed
// read) of every crossbar is digitised per bit-plane by an ADC of adc_bits
// shared by cols_per_adc columns; shift-and-add combines planes, slices
// and signs; partial sums of crossbars along K are added digitally.
//
// Numerics: kBitExact runs every bit-plane and slice through the ADC (for
// validation); kFast quantises weights and inputs exactly as the device
// does, and models the ADCs as a dithered rounding of each crossbar's
// output (an error uniform over one step, independent of the value),
// computed as one product plus those errors. Its step is calibrated: the
// first read, and every 64th after, runs the bit-exact path on a few input
// vectors and sets the step so the error variance matches; read noise adds
// the variance the bit-exact path would. With an ADC that resolves every
// sum both modes are the exact integer product of the quantised operands. With an ADC fine enough to resolve every column sum both are
// the exact integer product of the quantised operands.
//
// Writes: programming writes every mapped cell once; each write is counted
// per cell, costs energy and latency, and wears the cell; programming past
// the endurance fails with FAILED_PRECONDITION naming the crossbar.
//
//   ReramConfig config;                 // NeuroSim V1.3 defaults
//   ASSIGN_OR_RETURN(ReramLayer layer, ReramLayer::Create(config, 512, 512));
//   ASSIGN_OR_RETURN(ReramReport p, layer.Program(w.data()));
//   ASSIGN_OR_RETURN(ReramReport f, layer.Forward(x.data(), 928, y.data()));
//
// Not thread-safe.
#ifndef HPT_DEVICES_RERAM_RERAM_LAYER_H_
#define HPT_DEVICES_RERAM_RERAM_LAYER_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hpt {

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
  int64_t crossbar_rows = 128;  // numRowSubArray
  int64_t crossbar_cols = 128;  // numColSubArray
  int cell_bits = 2;            // cellBit
  int adc_bits = 5;             // levelOutput = 32
  int64_t cols_per_adc = 8;     // numColMuxed
  double read_voltage_v = 0.5;  // readVoltage
  double read_pulse_s = 10e-9;  // readPulseWidth
  double r_on_ohm = 6e3;        // resistanceOn
  double on_off_ratio = 150;    // resistanceOff = 6e3 * 150
  double write_voltage_v = 2.0; // writeVoltage
  double clock_hz = 1e9;        // clkFreq (digital shift-and-add, buffers)
  // NeuroSim V1.3 Inference_pytorch/inference.py: --wl_weight 8, --wl_activate 8.
  int weight_bits = 8;
  int input_bits = 8;
  SignMode sign_mode = SignMode::kDifferential;
  AdcRanging adc_ranging = AdcRanging::kPerRead;
  // ISAAC (Shafiee et al., ISCA 2016), Table 6: 8 crossbars per in-situ
  // multiply-accumulate unit; we call that group a tile.
  int64_t crossbars_per_tile = 8;

  // Component costs not given as constants by NeuroSim V1.3 (it derives
  // them from circuit models):
  // ADC: ISAAC's 8-bit ADC, 16 mW at 1.28 GS/s = 12.5 pJ per conversion,
  // i.e. 48.8 fJ per conversion step (Walden figure of merit), scaled by
  // 2^adc_bits; one conversion per 1/1.28 GHz.
  double adc_energy_per_step_j = 48.8e-15;
  double adc_conversion_s = 1.0 / 1.28e9;
  // 1-bit DAC (wordline driver): ISAAC, 4 mW for 8 x 128 DACs per 100 ns
  // cycle = 0.39 pJ per activation.
  double dac_energy_j = 0.39e-12;
  // Shift-and-add: ISAAC, 0.05 mW per unit at 1.28 GHz = 0.039 pJ per op.
  double shift_add_energy_j = 0.039e-12;
  // Input/output buffers: Horowitz, ISSCC 2014, 8 KB SRAM 64-bit read
  // 10 pJ = 1.25 pJ per byte (45 nm, conservative at 22 nm).
  double buffer_energy_per_byte_j = 1.25e-12;
  // Writes (NeuroSim models inference only): writeVoltage above across a
  // cell at Ron for a pulse as long as the read pulse, with iterative
  // write-verify of write_pulses_per_cell pulses for a multi-level cell
  // (Alibart et al., Nanotechnology 23 (2012) 075201: high-precision
  // tuning by repeated pulses with verify reads).
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
};

absl::Status ValidateReramConfig(const ReramConfig& config);

struct ReramReport {
  double latency_s = 0;
  double energy_j = 0;
  int64_t crossbar_activations = 0;  // crossbar reads (per input bit-plane)
  int64_t adc_conversions = 0;
  int64_t dac_activations = 0;
  int64_t shift_adds = 0;
  int64_t cell_writes = 0;
  int64_t max_cell_writes = 0;  // worst cell, after this operation
  double worst_wear = 0;        // max_cell_writes / endurance
  double cell_energy_j = 0, adc_energy_j = 0, dac_energy_j = 0,
         digital_energy_j = 0, write_energy_j = 0;
};

class ReramLayer {
 public:
  static absl::StatusOr<ReramLayer> Create(const ReramConfig& config,
                                           int64_t in_features,
                                           int64_t out_features);

  // Programs W (row-major K x N). Fails before writing anything if any
  // cell would pass its endurance.
  absl::StatusOr<ReramReport> Program(const float* w);
  // y[batch x N] = x[batch x K] W.
  absl::StatusOr<ReramReport> Forward(const float* x, int64_t batch, float* y);
  // g_x[batch x K] = g[batch x N] W^T, a transposed crossbar read.
  absl::StatusOr<ReramReport> Transposed(const float* g, int64_t batch,
                                         float* g_x);

  int64_t in_features() const { return k_; }
  int64_t out_features() const { return n_; }
  int64_t crossbars() const;
  int64_t tiles() const;
  int64_t slices() const { return slices_; }
  int64_t cells() const;  // mapped cells
  int64_t max_cell_writes() const { return max_writes_; }
  const ReramConfig& config() const { return config_; }
  bool programmed() const { return programmed_; }

  // Full-scale ADC step (in level units) of a sum over `lines` cells.
  double FullScaleStep(int64_t lines) const;
  // Weight and input scales of the last Program / read.
  double weight_scale() const { return w_scale_; }

 private:
  ReramLayer(const ReramConfig& config, int64_t k, int64_t n);

  int signs() const { return config_.sign_mode == SignMode::kDifferential ? 2 : 1; }
  int64_t row_blocks() const;
  int64_t col_blocks() const;  // per slice and sign
  // Level of (slice, sign) at [row][col], possibly with programming noise.
  float* levels(int slice, int sign) {
    return levels_.data() + (int64_t(sign) * slices_ + slice) * k_ * n_;
  }
  const float* levels(int slice, int sign) const {
    return levels_.data() + (int64_t(sign) * slices_ + slice) * k_ * n_;
  }
  // Digitises `count` line sums read together by one crossbar (in place).
  void Adc(float* sums, int64_t count, int64_t lines) const;
  // Quantises `n` values to input_bits; returns the scale.
  double QuantizeInputs(const float* in, int64_t n, std::vector<float>* q) const;
  void ReadCosts(int64_t batch, int64_t lines_per_crossbar,
                 const std::vector<float>& quantized, int64_t vector_len,
                 ReramReport* report) const;
  void FastRead(const std::vector<float>& xq, int64_t batch, bool transposed,
                float* out);
  // Variance (integer-product units) of the bit-exact path's ADC error per
  // output, measured on the first few input vectors.
  double CalibrateAdcError(const std::vector<float>& xq, int64_t batch,
                           bool transposed);
  void ExactRead(const std::vector<float>& xq, int64_t batch, bool transposed,
                 float* out);

  ReramConfig config_;
  int64_t k_, n_;
  int slices_;
  int magnitude_bits_;
  std::vector<float> levels_;     // signs x slices x K x N, level units
  std::vector<float> effective_;  // K x N integer-valued weights (with noise)
  std::vector<float> row_level_sum_, col_level_sum_;  // for cell energy
  std::vector<uint32_t> writes_;  // per crossbar (all its cells alike)
  int64_t max_writes_ = 0;
  double adc_error_var_[2] = {-1, -1};  // forward, transposed; <0: unknown
  int64_t reads_since_calibration_[2] = {0, 0};
  double w_scale_ = 1;
  bool programmed_ = false;
  std::mt19937_64 rng_;
};

}  // namespace hpt

#endif  // HPT_DEVICES_RERAM_RERAM_LAYER_H_
