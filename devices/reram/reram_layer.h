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
// computed as one product plus those errors. The product is exact: with
// 8-bit inputs and integer weight levels within int8 (weight_bits <= 8, no
// programming noise) it is an int8 GEMM with int32 sums (cpu_kernels.h);
// otherwise an fp32 GEMM of the integer-valued operands. Its step is calibrated: the
// first read, and every 64th after, runs the bit-exact path on a few input
// vectors and sets the step so the error variance matches; read noise adds
// the variance the bit-exact path would. With an ADC fine enough to
// resolve every column sum both modes are the exact integer product of the
// quantised operands.
//
// Costs: reads are costed by reram_cost.h (DNN+NeuroSim V1.3's structure,
// calibrated against its runs), a transposed read as the same layer read
// with K and N exchanged (sensing on the rows, as PipeLayer's backward
// does: Song et al., HPCA 2017).
//
// Writes: programming writes every mapped cell of every copy once; each
// write is counted per cell, costs energy and latency, and wears the cell;
// programming past the endurance fails with FAILED_PRECONDITION naming the
// crossbar.
//
//   ReramConfig config;                 // NeuroSim V1.3 defaults
//   ASSIGN_OR_RETURN(ReramLayer layer, ReramLayer::Create(config, 512, 512));
//   ASSIGN_OR_RETURN(ReramReport p, layer.Program(w.data()));
//   ASSIGN_OR_RETURN(ReramReport f, layer.Forward(x.data(), 928, y.data()));
//
// Not thread-safe.
#ifndef HPT_DEVICES_RERAM_RERAM_LAYER_H_
#define HPT_DEVICES_RERAM_RERAM_LAYER_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/reram/reram_config.h"
#include "devices/reram/reram_cost.h"

namespace hpt {

struct ReramReport {
  double latency_s = 0;
  double energy_j = 0;
  int64_t crossbar_activations = 0;  // subarray reads (per input bit-plane)
  int64_t adc_conversions = 0;
  int64_t cell_writes = 0;
  int64_t max_cell_writes = 0;  // worst cell, after this operation
  double worst_wear = 0;        // max_cell_writes / endurance
  int64_t duplication = 1;      // copies of the weights on the chip
  // Reads: the cost model's components (reram_cost.h); writes: write_energy_j.
  double adc_energy_j = 0, accumulation_energy_j = 0, buffer_energy_j = 0,
         interconnect_energy_j = 0, periphery_energy_j = 0, write_energy_j = 0;
};

class ReramLayer {
 public:
  static absl::StatusOr<ReramLayer> Create(const ReramConfig& config,
                                           int64_t in_features,
                                           int64_t out_features);

  // Copies of the weights on the chip (reram_chip.h); takes effect at the
  // next Program, which writes every copy's cells. Reads divide their
  // vectors among the copies.
  absl::Status SetDuplication(int64_t copies);
  int64_t duplication() const { return duplication_; }

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
  int64_t crossbars() const;  // crossbars holding one copy's cells
  int64_t slices() const { return slices_; }
  int64_t cells() const;  // mapped cells of one copy
  // NeuroSim's floorplan of the layer (one copy) and its footprint.
  const ReramFloorplan& floorplan() const { return plan_; }
  int64_t max_cell_writes() const { return max_writes_; }
  const ReramConfig& config() const { return config_; }
  bool programmed() const { return programmed_; }

  // What one read hands the next: the ADC error calibration and the
  // position in the layer's random stream. A checkpoint carries it, so a
  // layer programmed afresh on another worker reads on exactly as this one
  // would (with programming noise off, the default: the fresh layer's cells
  // then hold the same levels).
  struct ReadState {
    double adc_error_var[2] = {-1, -1};
    int64_t reads_since_calibration[2] = {0, 0};
    uint64_t draws = 0;  // values drawn from the random stream so far
  };
  ReadState read_state() const;
  void RestoreReadState(const ReadState& state);

  // Process-wide: whether fast reads may take the int8 product (default
  // true); false forces the fp32 GEMM, for benchmarks that compare them.
  static void SetInt8Reads(bool on);
  // Whether this layer's fast reads take the int8 product now.
  bool Int8Reads() const;

  // Full-scale ADC step (in level units) of a sum over `lines` cells.
  double FullScaleStep(int64_t lines) const;
  // Weight and input scales of the last Program / read.
  double weight_scale() const { return w_scale_; }

 private:
  ReramLayer(const ReramConfig& config, int64_t k, int64_t n);

  int signs() const { return config_.sign_mode == SignMode::kDifferential ? 2 : 1; }
  // Slice s's place value, 2^(s * cell_bits), where the shift-and-add
  // puts it; a product by it is exact.
  double SlicePlace(int s) const { return std::ldexp(1.0, s * config_.cell_bits); }
  // Each of the k x n weights `w`, already checked finite, quantised to
  // weight_bits at scale w_scale_ and split into the cells' levels (with
  // programming noise); effective_ holds what the cells then store, and
  // effective_i8_ the same as int8 where it is exact.
  void WriteLevels(const float* w);
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
  // Forward (transposed false) or transposed read of `batch` vectors.
  absl::StatusOr<ReramReport> Read(const float* in, int64_t batch, bool transposed,
                                   float* out);
  // Quantises `n` values to input_bits (as floats, or int8 when
  // input_bits <= 8); returns the scale.
  template <typename T>
  double QuantizeInputs(const float* in, int64_t n, std::vector<T>* q) const;
  void ReadCosts(int64_t batch, bool transposed, ReramReport* report) const;
  // The calibrated fast path: `out` = scale * (xq W + ADC and read noise),
  // the scale folded into the GEMM and the noise so no pass is spent on it.
  void FastRead(const std::vector<float>& xq, int64_t batch, bool transposed, float scale,
                float* out);
  // The same with int8 operands and exact int32 sums.
  void FastReadInt8(const std::vector<int8_t>& xq, int64_t batch, bool transposed,
                    float scale, float* out);
  // On the first read of a direction and every 64th after, measures the
  // ADC error on the first vectors of `xq` (CalibrateAdcError).
  bool NeedsCalibration(bool transposed) const;
  void MaybeCalibrate(const std::vector<float>& xq, int64_t batch, bool transposed);
  // Adds the ADC dither and the read noise to a product in `out`, drawing
  // the call's seed from the layer's stream. With `sums` (the int8 path's
  // integer product), first sets out = scale * sums.
  void AddReadErrors(int64_t batch, bool transposed, float scale, float* out,
                     const int32_t* sums = nullptr);
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
  std::vector<int8_t> effective_i8_;  // the same as int8, when they all are
  std::vector<uint32_t> writes_;  // per crossbar (all its cells alike)
  int64_t max_writes_ = 0;
  double adc_error_var_[2] = {-1, -1};  // forward, transposed; <0: unknown
  int64_t reads_since_calibration_[2] = {0, 0};
  double w_scale_ = 1;
  bool programmed_ = false;
  int64_t duplication_ = 1;
  ReramFloorplan plan_;
  // The layer's random stream, counting what it hands out.
  struct CountingEngine {
    using result_type = std::mt19937_64::result_type;
    explicit CountingEngine(uint64_t seed) : engine(seed) {}
    static constexpr result_type min() { return std::mt19937_64::min(); }
    static constexpr result_type max() { return std::mt19937_64::max(); }
    result_type operator()() {
      ++draws;
      return engine();
    }
    std::mt19937_64 engine;
    uint64_t draws = 0;
  };
  CountingEngine rng_;
};

}  // namespace hpt

#endif  // HPT_DEVICES_RERAM_RERAM_LAYER_H_
