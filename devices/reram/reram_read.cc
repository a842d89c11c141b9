// ReramLayer's reads: the bit-exact read, crossbar by crossbar, and the
// fast read (one integer GEMM, with each crossbar's ADC error added back
// as a calibrated dither), with read noise. Programming, quantisation and
// the costs are in reram_layer.cc.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "devices/blas.h"
#include "devices/cpu_kernels.h"
#include "devices/reram/reram_layer.h"
#include "devices/reram/reram_layer_internal.h"

namespace hpt {

using reram_internal::CeilDiv;
using reram_internal::kGrain;

// The fast read's dither passes (HPT_VECTOR_CLONES: cpu_kernels.h).
namespace reram_kernels {

// The dither of four crossbars per element e in [begin, end): a counter
// hash of (e, call seed, pass), one byte per crossbar (AddReadErrors).
// With `sums`, out = scale * sums + dither; else out += dither.
HPT_VECTOR_CLONES void Dither(float* out, const int32_t* sums, float scale, int64_t begin,
                              int64_t end, uint32_t call_seed, uint32_t pass, uint32_t mask,
                              float unit, float centre) {
  for (int64_t e = begin; e < end; ++e) {
    uint32_t h = (static_cast<uint32_t>(e) * 0x9E3779B1u ^ call_seed) + pass;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    h &= mask;
    const uint32_t pairs = (h & 0x00FF00FFu) + ((h >> 8) & 0x00FF00FFu);
    const uint32_t bytes = (pairs & 0xFFFFu) + (pairs >> 16);
    const float d = static_cast<float>(static_cast<int32_t>(bytes)) * unit - centre;
    out[e] = (sums ? scale * static_cast<float>(sums[e]) : out[e]) + d;
  }
}
HPT_VECTOR_CLONES void ScaleSums(const int32_t* sums, int64_t begin, int64_t end, float scale,
                                 float* out) {
  for (int64_t e = begin; e < end; ++e) out[e] = scale * static_cast<float>(sums[e]);
}
}  // namespace reram_kernels

namespace {

// Cheap uniform numbers in [0, 1) for the fast path's dither (splitmix64).
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  double Uniform() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return double(z >> 11) * (1.0 / 9007199254740992.0);
  }
  double Normal() {  // Box-Muller
    const double u1 = std::max(Uniform(), 1e-300), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace

void ReramLayer::ExactRead(const std::vector<float>& xq, int64_t batch,
                           bool transposed, float* out) {
  const int planes = config_.input_bits;
  const int64_t in_len = transposed ? n_ : k_;
  const int64_t out_len = transposed ? k_ : n_;
  const int64_t block = transposed ? config_.crossbar_cols : config_.crossbar_rows;
  // Lines digitised together by one crossbar: its columns (rows when
  // transposed).
  const int64_t out_block = transposed ? config_.crossbar_rows : config_.crossbar_cols;
  const int64_t blocks = transposed ? col_blocks() : row_blocks();
  const uint32_t mask = (uint32_t{1} << planes) - 1;
  const int64_t levels_n = int64_t(signs()) * slices_;
  // A chunk of rows has every bit-plane's column sums for every (sign,
  // slice) level matrix made by one product a matrix, the planes stacked
  // as rows, so each matrix is read once a chunk rather than once a plane.
  // The ADC, noise and accumulation then run in the device's order (block,
  // plane, sign, slice). A chunk's sums stay within about 4 MB.
  const int64_t chunk = std::max<int64_t>(
      1, std::min<int64_t>(batch, (int64_t{1} << 20) / (levels_n * planes * out_len)));
  std::normal_distribution<double> noise(0.0, 1.0);
  std::fill(out, out + batch * out_len, 0.0f);
  std::vector<float> bits, sums(levels_n * planes * chunk * out_len);
  for (int64_t r0 = 0; r0 < batch; r0 += chunk) {
    const int64_t rows = std::min(chunk, batch - r0);
    float* const rows_out = out + r0 * out_len;
    // One (sign, slice)'s sums of plane p: rows x out_len, contiguous.
    const auto plane_sums = [&](int64_t level, int p) {
      return sums.data() + (level * planes + p) * rows * out_len;
    };
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t b0 = blk * block, b1 = std::min(in_len, b0 + block), nb = b1 - b0;
      const double read_sigma = config_.read_noise_sigma * std::sqrt(double(nb));
      // The rows' bit-planes, plane-major: [planes * rows, nb], every
      // element written below.
      bits.resize(planes * rows * nb);
      for (int64_t b = 0; b < rows; ++b) {
        for (int64_t i = 0; i < nb; ++i) {
          const uint32_t u =
              static_cast<uint32_t>(static_cast<int64_t>(xq[(r0 + b) * in_len + b0 + i])) & mask;
          for (int p = 0; p < planes; ++p) bits[(p * rows + b) * nb + i] = float((u >> p) & 1u);
        }
      }
      for (int sign = 0; sign < signs(); ++sign) {
        for (int s = 0; s < slices_; ++s) {
          const float* l = levels(s, sign);
          float* dst = plane_sums(int64_t(sign) * slices_ + s, 0);
          if (transposed) {
            // Sums along rows of the crossbars in this column block.
            SgemmBt(planes * rows, k_, nb, 1.0f, bits.data(), nb, l + b0, n_, 0.0f, dst, k_);
          } else {
            Sgemm(planes * rows, n_, nb, 1.0f, bits.data(), nb, l + b0 * n_, n_, 0.0f, dst, n_);
          }
        }
      }
      for (int p = 0; p < planes; ++p) {
        // Two's complement: the top bit-plane counts negatively.
        const double plane_weight = (p == planes - 1 ? -1.0 : 1.0) * std::ldexp(1.0, p);
        for (int sign = 0; sign < signs(); ++sign) {
          for (int s = 0; s < slices_; ++s) {
            float* const plane = plane_sums(int64_t(sign) * slices_ + s, p);
            const float weight =
                static_cast<float>(plane_weight * SlicePlace(s) * (sign == 0 ? 1.0 : -1.0));
            if (read_sigma > 0) {
              for (int64_t e = 0; e < rows * out_len; ++e) {
                plane[e] += static_cast<float>(read_sigma * noise(rng_));
              }
            }
            for (int64_t b = 0; b < rows; ++b) {
              for (int64_t o0 = 0; o0 < out_len; o0 += out_block) {
                Adc(&plane[b * out_len + o0], std::min(out_block, out_len - o0), nb);
              }
            }
            for (int64_t e = 0; e < rows * out_len; ++e) rows_out[e] += weight * plane[e];
          }
        }
      }
    }
  }
  if (config_.sign_mode == SignMode::kOffset) {
    // Digital correction of the offset encoding: subtract 2^(b-1) * sum(x).
    const float offset = static_cast<float>(int64_t{1} << (config_.weight_bits - 1));
    for (int64_t b = 0; b < batch; ++b) {
      double total = 0;
      for (int64_t i = 0; i < in_len; ++i) total += xq[b * in_len + i];
      for (int64_t o = 0; o < out_len; ++o) {
        out[b * out_len + o] -= offset * static_cast<float>(total);
      }
    }
  }
}

double ReramLayer::CalibrateAdcError(const std::vector<float>& xq, int64_t batch,
                                     bool transposed) {
  const int64_t in_len = transposed ? n_ : k_;
  const int64_t out_len = transposed ? k_ : n_;
  const int64_t rows = std::min<int64_t>(batch, 8);
  std::vector<float> sample(xq.begin(), xq.begin() + rows * in_len);
  std::vector<float> digitised(rows * out_len), exact(rows * out_len);
  // The ADC error alone: read noise is modelled separately.
  const double read_noise = config_.read_noise_sigma;
  config_.read_noise_sigma = 0;
  ExactRead(sample, rows, transposed, digitised.data());
  config_.read_noise_sigma = read_noise;
  if (transposed) {
    SgemmBt(rows, k_, n_, 1.0f, sample.data(), n_, effective_.data(), n_, 0.0f,
            exact.data(), k_);
  } else {
    Sgemm(rows, n_, k_, 1.0f, sample.data(), k_, effective_.data(), n_, 0.0f,
          exact.data(), n_);
  }
  double sum = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double d = double(digitised[i]) - exact[i];
    sum += d * d;
  }
  return sum / double(exact.size());
}

void ReramLayer::FastRead(const std::vector<float>& xq, int64_t batch,
                          bool transposed, float scale, float* out) {
  if (transposed) {
    SgemmBt(batch, k_, n_, scale, xq.data(), n_, effective_.data(), n_, 0.0f, out, k_);
  } else {
    Sgemm(batch, n_, k_, scale, xq.data(), k_, effective_.data(), n_, 0.0f, out, n_);
  }
  MaybeCalibrate(xq, batch, transposed);
  AddReadErrors(batch, transposed, scale, out);
}

void ReramLayer::FastReadInt8(const std::vector<int8_t>& xq, int64_t batch,
                              bool transposed, float scale, float* out) {
  const int64_t in_len = transposed ? n_ : k_;
  const int64_t count = batch * (transposed ? k_ : n_);
  std::unique_ptr<int32_t[]> sums(new int32_t[count]);  // the GEMM writes all
  if (transposed) {
    Int8Gemm(batch, k_, n_, xq.data(), effective_i8_.data(), /*b_transposed=*/true,
             sums.get());
  } else {
    Int8Gemm(batch, n_, k_, xq.data(), effective_i8_.data(), /*b_transposed=*/false,
             sums.get());
  }
  // Calibration runs the bit-exact path on the first few vectors, which
  // takes float operands: copied only when it is due.
  const int64_t rows = std::min<int64_t>(batch, 8);
  std::vector<float> sample;
  if (NeedsCalibration(transposed)) sample.assign(xq.begin(), xq.begin() + rows * in_len);
  MaybeCalibrate(sample, rows, transposed);
  AddReadErrors(batch, transposed, scale, out, sums.get());
}

bool ReramLayer::NeedsCalibration(bool transposed) const {
  const int dir = transposed ? 1 : 0;
  return adc_error_var_[dir] < 0 || reads_since_calibration_[dir] >= 64;
}

void ReramLayer::MaybeCalibrate(const std::vector<float>& xq, int64_t batch,
                                bool transposed) {
  // ADC error: calibrated against the bit-exact path on the first read and
  // every 64th after (weights are fixed; input statistics drift slowly).
  const int dir = transposed ? 1 : 0;
  if (NeedsCalibration(transposed)) {
    adc_error_var_[dir] = CalibrateAdcError(xq, batch, transposed);
    reads_since_calibration_[dir] = 0;
  }
  ++reads_since_calibration_[dir];
}

void ReramLayer::AddReadErrors(int64_t batch, bool transposed, float scale, float* out,
                               const int32_t* sums) {
  const int64_t in_len = transposed ? n_ : k_;
  const int64_t out_len = transposed ? k_ : n_;
  const int64_t block = transposed ? config_.crossbar_cols : config_.crossbar_rows;
  const int64_t blocks = CeilDiv(in_len, block);
  const int64_t count = batch * out_len;
  const int dir = transposed ? 1 : 0;
  const uint32_t call_seed = static_cast<uint32_t>(rng_());
  if (adc_error_var_[dir] > 0) {
    // One dithered rounding per crossbar along the input: each adds an
    // error uniform over its step, independent of the value (Schuchman,
    // IEEE Trans. Commun. Tech., 1964), so the crossbars' errors add up to
    // the calibrated variance. The dither comes from a counter hash: each
    // 32-bit hash gives four crossbars one byte each ((byte + 0.5) / 256 of
    // a step, variance within 1.6e-5 of a continuous uniform's), one pass
    // over the outputs per four crossbars, so each pass vectorises.
    const float step =
        scale * static_cast<float>(std::sqrt(12.0 * adc_error_var_[dir] / blocks));
    const float unit = step * (1.0f / 256.0f);
    for (int64_t first = 0; first < blocks; first += 4) {
      const int used = static_cast<int>(std::min<int64_t>(4, blocks - first));
      const uint32_t mask = used == 4 ? 0xFFFFFFFFu : (1u << (8 * used)) - 1;
      // Sum of `used` bytes each centred: (byte + 0.5) - 128 per crossbar.
      const float centre = unit * (128.0f - 0.5f) * float(used);
      const uint32_t pass = static_cast<uint32_t>(first / 4) * 0x85EBCA6Bu;
      // The first pass also scales the integer sums into `out`.
      const int32_t* scaled = first == 0 ? sums : nullptr;
      ParallelFor(count, kGrain, [&](int64_t begin, int64_t end) {
        reram_kernels::Dither(out, scaled, scale, begin, end, call_seed, pass, mask, unit,
                              centre);
      });
    }
  } else if (sums != nullptr) {
    ParallelFor(count, kGrain, [&](int64_t begin, int64_t end) {
      reram_kernels::ScaleSums(sums, begin, end, scale, out);
    });
  }
  if (config_.read_noise_sigma > 0) {
    // Read noise of every conversion, weighted as the shift-and-add
    // weights them: 2^plane * 2^(slice * cell_bits), both signs.
    double weight_sq = 0;
    for (int p = 0; p < config_.input_bits; ++p) {
      for (int s = 0; s < slices_; ++s) {
        weight_sq += std::ldexp(1.0, 2 * p) * SlicePlace(s) * SlicePlace(s);
      }
    }
    weight_sq *= signs();
    SplitMix normal_source(config_.seed ^ (uint64_t(call_seed) << 32));
    const float read_sigma = scale * static_cast<float>(
        config_.read_noise_sigma * std::sqrt(double(in_len) * weight_sq));
    for (int64_t e = 0; e < count; ++e) {
      out[e] += read_sigma * static_cast<float>(normal_source.Normal());
    }
  }
}

}  // namespace hpt
