#include "devices/reram/reram_layer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "devices/blas.h"
#include "devices/cpu_kernels.h"
#include "devices/reram/reram_layer_internal.h"

namespace hpt {

using reram_internal::CeilDiv;
using reram_internal::kGrain;

// The read's quantisation passes (HPT_VECTOR_CLONES: cpu_kernels.h).
namespace reram_kernels {

// max |x| over n values, as the bits of a non-negative float (which order
// as integers do): an integer max reduction, which vectorises.
HPT_VECTOR_CLONES uint32_t MaxAbsBits(const float* x, int64_t n) {
  uint32_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    bits &= 0x7FFFFFFFu;
    best = bits > best ? bits : best;
  }
  return best;
}

// Round to nearest by adding and removing 1.5 * 2^23 (|value| <= 2^15).
HPT_VECTOR_CLONES void QuantizeToFloat(const float* in, int64_t n, float inv, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = (in[i] * inv + 12582912.0f) - 12582912.0f;
}
HPT_VECTOR_CLONES void QuantizeToInt8(const float* in, int64_t n, float inv, int8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<int8_t>(static_cast<int32_t>((in[i] * inv + 12582912.0f) - 12582912.0f));
  }
}

}  // namespace reram_kernels


ReramLayer::ReramLayer(const ReramConfig& config, int64_t k, int64_t n)
    : config_(config), k_(k), n_(n), rng_(config.seed) {
  magnitude_bits_ = config.sign_mode == SignMode::kDifferential
                        ? config.weight_bits - 1
                        : config.weight_bits;
  slices_ = static_cast<int>(CeilDiv(magnitude_bits_, config.cell_bits));
}

absl::StatusOr<ReramLayer> ReramLayer::Create(const ReramConfig& config,
                                              int64_t in_features,
                                              int64_t out_features) {
  if (absl::Status s = ValidateReramConfig(config); !s.ok()) return s;
  if (in_features < 1 || out_features < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reram layer shape must be positive, got ", in_features, " x ",
        out_features));
  }
  ReramLayer layer(config, in_features, out_features);
  layer.writes_.assign(layer.crossbars(), 0);
  layer.plan_ = PlanReramLayer(config, in_features, out_features);
  return layer;
}

absl::Status ReramLayer::SetDuplication(int64_t copies) {
  if (copies < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reram duplication must be at least 1, got ", copies));
  }
  duplication_ = copies;
  return absl::OkStatus();
}

int64_t ReramLayer::row_blocks() const { return CeilDiv(k_, config_.crossbar_rows); }
int64_t ReramLayer::col_blocks() const { return CeilDiv(n_, config_.crossbar_cols); }
int64_t ReramLayer::crossbars() const { return ReramCrossbars(config_, k_, n_); }
int64_t ReramLayer::cells() const { return k_ * n_ * slices_ * signs(); }

double ReramLayer::FullScaleStep(int64_t lines) const {
  const double max_level = (1 << config_.cell_bits) - 1;
  const double codes = double((int64_t{1} << config_.adc_bits) - 1);
  // An ADC with at least one code per possible sum resolves it exactly.
  return std::max(1.0, double(lines) * max_level / codes);
}

void ReramLayer::Adc(float* sums, int64_t count, int64_t lines) const {
  const double codes = double((int64_t{1} << config_.adc_bits) - 1);
  double low = 0, step = FullScaleStep(lines);
  if (config_.adc_ranging == AdcRanging::kPerRead) {
    const auto [lo, hi] = MinMax(sums, count);
    low = lo;
    // Line sums are integers (in level units): a step of one resolves them.
    step = std::max(1.0, double(hi - lo) / codes);
  }
  Digitise(sums, count, low, step, codes);
}

template <typename T>
double ReramLayer::QuantizeInputs(const float* in, int64_t n, std::vector<T>* q) const {
  std::atomic<uint32_t> max_bits{0};
  ParallelFor(n, kGrain, [&](int64_t begin, int64_t end) {
    const uint32_t local = reram_kernels::MaxAbsBits(in + begin, end - begin);
    uint32_t seen = max_bits.load();
    while (local > seen && !max_bits.compare_exchange_weak(seen, local)) {
    }
  });
  float max_abs;
  const uint32_t bits = max_bits.load();
  std::memcpy(&max_abs, &bits, 4);
  const double qmax = double((int64_t{1} << (config_.input_bits - 1)) - 1);
  const double scale = max_abs > 0 ? max_abs / qmax : 1.0;
  const float inv = static_cast<float>(1.0 / scale);
  q->resize(n);
  T* dst = q->data();
  ParallelFor(n, kGrain, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, int8_t>) {
      reram_kernels::QuantizeToInt8(in + begin, end - begin, inv, dst + begin);
    } else {
      reram_kernels::QuantizeToFloat(in + begin, end - begin, inv, dst + begin);
    }
  });
  return scale;
}

namespace {
std::atomic<bool> int8_reads{true};
}  // namespace

void ReramLayer::SetInt8Reads(bool on) { int8_reads = on; }

bool ReramLayer::Int8Reads() const {
  return int8_reads && config_.numerics == ReramNumerics::kFast && config_.input_bits <= 8 &&
         !effective_i8_.empty();
}

void ReramLayer::WriteLevels(const float* w) {
  const int64_t offset = int64_t{1} << (config_.weight_bits - 1);
  const int64_t level_mask = (int64_t{1} << config_.cell_bits) - 1;
  const float max_level = static_cast<float>(level_mask);
  levels_.assign(int64_t(signs()) * slices_ * k_ * n_, 0.0f);
  effective_.assign(k_ * n_, 0.0f);
  std::normal_distribution<double> noise(0.0, config_.program_noise_sigma);
  const bool noisy = config_.program_noise_sigma > 0;
  // The slices' place values once, without a libm call per cell.
  std::vector<double> place(slices_);
  for (int s = 0; s < slices_; ++s) place[s] = SlicePlace(s);
  for (int64_t i = 0; i < k_ * n_; ++i) {
    const int64_t q = std::llround(double(w[i]) / w_scale_);
    int64_t mags[2];
    if (config_.sign_mode == SignMode::kDifferential) {
      mags[0] = std::max<int64_t>(q, 0);
      mags[1] = std::max<int64_t>(-q, 0);
    } else {
      mags[0] = q + offset;
      mags[1] = 0;
    }
    double effective = 0;
    for (int sign = 0; sign < signs(); ++sign) {
      for (int s = 0; s < slices_; ++s) {
        float level = static_cast<float>((mags[sign] >> (s * config_.cell_bits)) &
                                         level_mask);
        if (noisy) {
          level = std::clamp(static_cast<float>(level + noise(rng_)), 0.0f,
                             max_level);
        }
        levels(s, sign)[i] = level;
        effective += (sign == 0 ? 1.0 : -1.0) * (double(level) * place[s]);
      }
    }
    if (config_.sign_mode == SignMode::kOffset) effective -= double(offset);
    effective_[i] = static_cast<float>(effective);
  }
  // Integer levels within int8 (no programming noise, weight_bits <= 8):
  // reads may take the exact int8 product.
  effective_i8_.clear();
  if (!noisy && config_.weight_bits <= 8) {
    effective_i8_.resize(k_ * n_);
    for (int64_t i = 0; i < k_ * n_; ++i) {
      effective_i8_[i] = static_cast<int8_t>(effective_[i]);
    }
  }
}

absl::StatusOr<ReramReport> ReramLayer::Program(const float* w) {
  const int64_t needed = max_writes_ + 1;
  if (double(needed) > config_.endurance_writes) {
    // Every programming writes every cell, so the first crossbar is the
    // first to wear out.
    return absl::FailedPreconditionError(
        absl::StrCat("reram crossbar 0 (tile 0) would exceed its endurance: its cells "
                     "have been written ",
                     max_writes_, " times and endurance_writes is ", config_.endurance_writes));
  }
  float max_abs = 0;
  for (int64_t i = 0; i < k_ * n_; ++i) {
    if (!std::isfinite(w[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("reram weight [", i / n_, ", ", i % n_, "] is not finite"));
    }
    max_abs = std::max(max_abs, std::fabs(w[i]));
  }
  const int64_t qmax = (int64_t{1} << (config_.weight_bits - 1)) - 1;
  w_scale_ = max_abs > 0 ? max_abs / double(qmax) : 1.0;
  WriteLevels(w);
  adc_error_var_[0] = adc_error_var_[1] = -1;  // new weights: recalibrate
  for (uint32_t& count : writes_) ++count;
  max_writes_ = needed;
  programmed_ = true;

  const ReramWriteCost cost = ReramProgramCost(config_, k_, n_, duplication_);
  ReramReport report;
  report.cell_writes = cost.cell_writes;
  report.duplication = duplication_;
  report.write_energy_j = cost.energy_j;
  report.energy_j = cost.energy_j;
  report.latency_s = cost.latency_s;
  report.max_cell_writes = max_writes_;
  report.worst_wear = double(max_writes_) / config_.endurance_writes;
  return report;
}

void ReramLayer::ReadCosts(int64_t batch, bool transposed, ReramReport* r) const {
  const ReramReadCost c = transposed
                              ? ReramLayerReadCost(config_, batch, n_, k_, duplication_)
                              : ReramLayerReadCost(config_, batch, k_, n_, duplication_);
  r->latency_s = c.latency_s;
  r->energy_j = c.energy_j;
  r->adc_energy_j = c.adc_j;
  r->accumulation_energy_j = c.accumulation_j;
  r->buffer_energy_j = c.buffer_j;
  r->interconnect_energy_j = c.interconnect_j;
  r->periphery_energy_j = c.periphery_j;
  r->adc_conversions = c.adc_conversions;
  r->crossbar_activations = batch * config_.input_bits * crossbars();
  r->duplication = duplication_;
  r->max_cell_writes = max_writes_;
  r->worst_wear = double(max_writes_) / config_.endurance_writes;
}

absl::StatusOr<ReramReport> ReramLayer::Forward(const float* x, int64_t batch,
                                                float* y) {
  return Read(x, batch, /*transposed=*/false, y);
}

absl::StatusOr<ReramReport> ReramLayer::Transposed(const float* g, int64_t batch,
                                                   float* g_x) {
  return Read(g, batch, /*transposed=*/true, g_x);
}

absl::StatusOr<ReramReport> ReramLayer::Read(const float* in, int64_t batch, bool transposed,
                                             float* out) {
  if (!programmed_) {
    return absl::FailedPreconditionError("reram layer read before Program()");
  }
  if (batch < 1) return absl::InvalidArgumentError("reram read batch must be positive");
  const int64_t in_len = transposed ? n_ : k_, out_len = transposed ? k_ : n_;
  if (Int8Reads()) {
    std::vector<int8_t> q;
    const double in_scale = QuantizeInputs(in, batch * in_len, &q);
    FastReadInt8(q, batch, transposed, static_cast<float>(in_scale * w_scale_), out);
  } else {
    std::vector<float> q;
    const double in_scale = QuantizeInputs(in, batch * in_len, &q);
    const float scale = static_cast<float>(in_scale * w_scale_);
    if (config_.numerics == ReramNumerics::kBitExact) {
      ExactRead(q, batch, transposed, out);
      for (int64_t e = 0; e < batch * out_len; ++e) out[e] *= scale;
    } else {
      FastRead(q, batch, transposed, scale, out);
    }
  }
  ReramReport report;
  ReadCosts(batch, transposed, &report);
  return report;
}

ReramLayer::ReadState ReramLayer::read_state() const {
  ReadState s;
  for (int dir = 0; dir < 2; ++dir) {
    s.adc_error_var[dir] = adc_error_var_[dir];
    s.reads_since_calibration[dir] = reads_since_calibration_[dir];
  }
  s.draws = rng_.draws;
  return s;
}

void ReramLayer::RestoreReadState(const ReadState& state) {
  for (int dir = 0; dir < 2; ++dir) {
    adc_error_var_[dir] = state.adc_error_var[dir];
    reads_since_calibration_[dir] = state.reads_since_calibration[dir];
  }
  rng_ = CountingEngine(config_.seed);
  rng_.engine.discard(state.draws);
  rng_.draws = state.draws;
}

}  // namespace hpt
