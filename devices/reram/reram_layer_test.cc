#include "devices/reram/reram_layer.h"

#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

struct Data {
  int64_t batch, k, n;
  std::vector<float> x, w, g;
};

Data MakeData(int64_t batch, int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Data d{batch, k, n, {}, {}, {}};
  d.x.resize(batch * k);
  d.w.resize(k * n);
  d.g.resize(batch * n);
  for (float& v : d.x) v = normal(rng);
  for (float& v : d.w) v = 0.1f * normal(rng);
  for (float& v : d.g) v = normal(rng);
  return d;
}

float MaxAbs(const std::vector<float>& v) {
  float m = 0;
  for (float e : v) m = std::max(m, std::fabs(e));
  return m;
}

// Analytic bound of |q(x) q(W) - x W| for symmetric rounding to b bits:
// each operand is off by at most half its step.
std::vector<double> QuantBound(const std::vector<float>& in, int64_t batch,
                               int64_t len, const std::vector<float>& w,
                               int64_t k, int64_t n, bool transposed, int bits) {
  const double qmax = (1 << (bits - 1)) - 1;
  const double s_in = MaxAbs(in) / qmax, s_w = MaxAbs(w) / qmax;
  const int64_t out_len = transposed ? k : n;
  std::vector<double> bound(batch * out_len, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t o = 0; o < out_len; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < len; ++i) {
        const double wi = transposed ? w[o * n + i] : w[i * n + o];
        sum += std::fabs(in[b * len + i]) * s_w / 2 + std::fabs(wi) * s_in / 2 +
               s_w * s_in / 4;
      }
      bound[b * out_len + o] = sum;
    }
  }
  return bound;
}

std::vector<float> Reference(const Data& d, bool transposed) {
  const int64_t out_len = transposed ? d.k : d.n;
  std::vector<float> out(d.batch * out_len);
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t o = 0; o < out_len; ++o) {
      double s = 0;
      if (transposed) {
        for (int64_t j = 0; j < d.n; ++j) s += double(d.g[b * d.n + j]) * d.w[o * d.n + j];
      } else {
        for (int64_t i = 0; i < d.k; ++i) s += double(d.x[b * d.k + i]) * d.w[i * d.n + o];
      }
      out[b * out_len + o] = static_cast<float>(s);
    }
  }
  return out;
}

ReramConfig Generous(ReramNumerics numerics) {
  ReramConfig c;
  c.adc_bits = 9;  // 511 codes >= 128 rows * 3 levels: every sum resolved
  c.numerics = numerics;
  return c;
}

double Rms(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s / a.size());
}

TEST(ReramLayerTest, GenerousBitsStayWithinTheQuantizationBound) {
  const Data d = MakeData(6, 300, 40, 1);  // 3 row blocks, partial last
  for (ReramNumerics mode : {ReramNumerics::kBitExact, ReramNumerics::kFast}) {
    auto layer = ReramLayer::Create(Generous(mode), d.k, d.n);
    ASSERT_TRUE(layer.ok());
    ASSERT_TRUE(layer->Program(d.w.data()).ok());
    std::vector<float> y(d.batch * d.n), gx(d.batch * d.k);
    ASSERT_TRUE(layer->Forward(d.x.data(), d.batch, y.data()).ok());
    ASSERT_TRUE(layer->Transposed(d.g.data(), d.batch, gx.data()).ok());
    const std::vector<float> ref_y = Reference(d, false), ref_gx = Reference(d, true);
    const auto bound_y = QuantBound(d.x, d.batch, d.k, d.w, d.k, d.n, false, 8);
    const auto bound_gx = QuantBound(d.g, d.batch, d.n, d.w, d.k, d.n, true, 8);
    for (size_t i = 0; i < y.size(); ++i) {
      // The analytic bound plus float rounding of the final scaling.
      EXPECT_LE(std::fabs(y[i] - ref_y[i]), bound_y[i] + 1e-5) << i;
    }
    for (size_t i = 0; i < gx.size(); ++i) {
      EXPECT_LE(std::fabs(gx[i] - ref_gx[i]), bound_gx[i] + 1e-5) << i;
    }
    // The bound is tight enough to mean something.
    EXPECT_LT(Rms(y, ref_y), 0.02 * std::sqrt(double(d.k)) * 0.1);
  }
}

TEST(ReramLayerTest, LosslessAdcMakesBothModesTheSameIntegerProduct) {
  const Data d = MakeData(5, 200, 30, 2);
  std::vector<float> exact(d.batch * d.n), fast(d.batch * d.n);
  auto a = ReramLayer::Create(Generous(ReramNumerics::kBitExact), d.k, d.n);
  auto b = ReramLayer::Create(Generous(ReramNumerics::kFast), d.k, d.n);
  ASSERT_TRUE(a->Program(d.w.data()).ok());
  ASSERT_TRUE(b->Program(d.w.data()).ok());
  ASSERT_TRUE(a->Forward(d.x.data(), d.batch, exact.data()).ok());
  ASSERT_TRUE(b->Forward(d.x.data(), d.batch, fast.data()).ok());
  for (size_t i = 0; i < exact.size(); ++i) {
    EXPECT_NEAR(exact[i], fast[i], 1e-5 * (1 + std::fabs(exact[i])));
  }
}

// The bit-exact read takes a long batch in chunks of rows (its bit-plane
// sums kept within a few MB): with a lossy ADC and no noise, a read of 600
// rows gives each row exactly what reading that row alone gives, forward
// (2 chunks here) and transposed (6 chunks).
TEST(ReramLayerTest, ABitExactReadInChunksReadsEachRowAsAlone) {
  Data d = MakeData(600, 300, 64, 5);
  // Every row holds the batch's largest input, so a row alone is quantised
  // with the whole batch's scale.
  for (int64_t b = 0; b < d.batch; ++b) d.x[b * d.k] = 8.0f;
  for (int64_t b = 0; b < d.batch; ++b) d.g[b * d.n] = 8.0f;
  ReramConfig c;
  c.numerics = ReramNumerics::kBitExact;
  auto layer = ReramLayer::Create(c, d.k, d.n);
  ASSERT_TRUE(layer.ok());
  ASSERT_TRUE(layer->Program(d.w.data()).ok());
  std::vector<float> y(d.batch * d.n), gx(d.batch * d.k), row_y(d.n), row_gx(d.k);
  ASSERT_TRUE(layer->Forward(d.x.data(), d.batch, y.data()).ok());
  ASSERT_TRUE(layer->Transposed(d.g.data(), d.batch, gx.data()).ok());
  for (int64_t b :
       {int64_t{0}, int64_t{108}, int64_t{109}, int64_t{511}, int64_t{512}, int64_t{599}}) {
    ASSERT_TRUE(layer->Forward(d.x.data() + b * d.k, 1, row_y.data()).ok());
    ASSERT_TRUE(layer->Transposed(d.g.data() + b * d.n, 1, row_gx.data()).ok());
    for (int64_t o = 0; o < d.n; ++o) EXPECT_EQ(y[b * d.n + o], row_y[o]) << b << " " << o;
    for (int64_t o = 0; o < d.k; ++o) EXPECT_EQ(gx[b * d.k + o], row_gx[o]) << b << " " << o;
  }
  // The ADC loses something, so the equality is not that of exact products.
  EXPECT_GT(Rms(y, Reference(d, false)), 0);
}

// The fast read's int8 product (8-bit inputs, int8 weight levels) and its
// fp32 product compute the same read: same quantised operands, same ADC
// dither and read noise from the same stream, differing only by the fp32
// GEMM's rounding of sums past 2^24. Forward and transposed, across the
// 64-read recalibration, and at the training shape's batch.
TEST(ReramLayerTest, Int8AndFp32ProductsGiveTheSameRead) {
  const Data d = MakeData(96, 512, 128, 9);
  ReramConfig config;  // defaults: 8-bit inputs and weights, 5-bit ADC
  config.read_noise_sigma = 0.01;
  std::vector<float> y8(d.batch * d.n), y32(d.batch * d.n), g8(d.batch * d.k),
      g32(d.batch * d.k);
  auto int8 = ReramLayer::Create(config, d.k, d.n);
  auto fp32 = ReramLayer::Create(config, d.k, d.n);
  ASSERT_TRUE(int8.ok() && fp32.ok());
  ASSERT_TRUE(int8->Program(d.w.data()).ok());
  ASSERT_TRUE(fp32->Program(d.w.data()).ok());
  EXPECT_TRUE(int8->Int8Reads());
  for (int read = 0; read < 66; ++read) {
    ReramLayer::SetInt8Reads(true);
    ASSERT_TRUE(int8->Forward(d.x.data(), d.batch, y8.data()).ok());
    ASSERT_TRUE(int8->Transposed(d.g.data(), d.batch, g8.data()).ok());
    ReramLayer::SetInt8Reads(false);
    ASSERT_TRUE(fp32->Forward(d.x.data(), d.batch, y32.data()).ok());
    ASSERT_TRUE(fp32->Transposed(d.g.data(), d.batch, g32.data()).ok());
    const float ys = MaxAbs(y32), gs = MaxAbs(g32);
    for (size_t i = 0; i < y8.size(); ++i) {
      ASSERT_NEAR(y8[i], y32[i], 1e-5f * ys) << "read " << read << " output " << i;
    }
    for (size_t i = 0; i < g8.size(); ++i) {
      ASSERT_NEAR(g8[i], g32[i], 1e-5f * gs) << "read " << read << " transposed " << i;
    }
  }
  EXPECT_FALSE(fp32->Int8Reads());
  ReramLayer::SetInt8Reads(true);
  EXPECT_EQ(int8->read_state().draws, fp32->read_state().draws);
  // Programming noise makes the levels non-integer: the fp32 product then.
  config.program_noise_sigma = 0.05;
  auto noisy = ReramLayer::Create(config, d.k, d.n);
  ASSERT_TRUE(noisy->Program(d.w.data()).ok());
  EXPECT_FALSE(noisy->Int8Reads());
}

// Removing one ADC bit: with per-read ranging each conversion's step is
// range / (2^b - 1), and the rounding error scales with the step, so the
// output error grows by (2^b - 1) / (2^(b-1) - 1): 15/7 = 2.14 from 4 to 3
// bits. (From 5 bits up many reads here span fewer codes than the ADC has
// and convert exactly, so the ratio is only predictable below that.)
// Measured against the lossless (9-bit) read, which isolates the ADC.
TEST(ReramLayerTest, OneAdcBitFewerRaisesTheErrorAsPredicted) {
  const Data d = MakeData(16, 256, 64, 3);
  auto read = [&](int adc_bits, ReramNumerics numerics) {
    ReramConfig c = Generous(numerics);
    c.adc_bits = adc_bits;
    auto layer = ReramLayer::Create(c, d.k, d.n);
    EXPECT_TRUE(layer->Program(d.w.data()).ok());
    std::vector<float> y(d.batch * d.n);
    EXPECT_TRUE(layer->Forward(d.x.data(), d.batch, y.data()).ok());
    return y;
  };
  const auto lossless = read(9, ReramNumerics::kBitExact);
  const double err4 = Rms(read(4, ReramNumerics::kBitExact), lossless);
  const double err3 = Rms(read(3, ReramNumerics::kBitExact), lossless);
  ASSERT_GT(err4, 0);
  EXPECT_NEAR(err3 / err4, 15.0 / 7.0, 0.15 * 15.0 / 7.0);
  // The default 5-bit ADC keeps the output usable: well under the signal.
  const double err5 = Rms(read(5, ReramNumerics::kBitExact), lossless);
  EXPECT_LT(err5, 0.1 * Rms(lossless, std::vector<float>(lossless.size(), 0.0f)));

  // The fast mode is calibrated to the bit-exact error level: this bounds
  // the difference between the two modes.
  const double fast4 = Rms(read(4, ReramNumerics::kFast), lossless);
  EXPECT_GT(fast4, 0.7 * err4);
  EXPECT_LT(fast4, 1.4 * err4);
}

TEST(ReramLayerTest, FullScaleRangingIsCoarserThanPerRead) {
  const Data d = MakeData(8, 128, 32, 9);
  std::vector<float> lossless(d.batch * d.n), per_read(d.batch * d.n),
      full_scale(d.batch * d.n);
  ReramConfig c = Generous(ReramNumerics::kBitExact);
  auto l0 = ReramLayer::Create(c, d.k, d.n);
  c.adc_bits = 5;
  auto l1 = ReramLayer::Create(c, d.k, d.n);
  c.adc_ranging = AdcRanging::kFullScale;
  auto l2 = ReramLayer::Create(c, d.k, d.n);
  for (auto* l : {&*l0, &*l1, &*l2}) ASSERT_TRUE(l->Program(d.w.data()).ok());
  ASSERT_TRUE(l0->Forward(d.x.data(), d.batch, lossless.data()).ok());
  ASSERT_TRUE(l1->Forward(d.x.data(), d.batch, per_read.data()).ok());
  ASSERT_TRUE(l2->Forward(d.x.data(), d.batch, full_scale.data()).ok());
  EXPECT_NEAR(l2->FullScaleStep(128), 384.0 / 31.0, 1e-12);
  EXPECT_GT(Rms(full_scale, lossless), 3 * Rms(per_read, lossless));
}

TEST(ReramLayerTest, Programming512x512CountsEveryCellOfEveryCopyOnce) {
  ReramConfig c;
  auto layer = ReramLayer::Create(c, 512, 512);
  ASSERT_TRUE(layer.ok());
  // 8-bit weights with an offset (NeuroSim's mapping): 4 two-bit cells.
  EXPECT_EQ(layer->slices(), 4);
  EXPECT_EQ(layer->crossbars(), 4 * 4 * 4);
  std::vector<float> w(512 * 512, 0.25f);
  auto first = layer->Program(w.data());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->cell_writes, 512LL * 512 * 4);
  EXPECT_EQ(first->max_cell_writes, 1);
  // 4 pulses of 2 V across 6 kOhm for 10 ns per cell.
  EXPECT_NEAR(first->write_energy_j, 1048576.0 * 4 * (4.0 / 6e3) * 10e-9, 1e-12);
  // Three copies: every copy's cells are written, each once.
  ASSERT_TRUE(layer->SetDuplication(3).ok());
  auto second = layer->Program(w.data());
  EXPECT_EQ(second->cell_writes, 3 * 1048576);
  EXPECT_EQ(second->duplication, 3);
  EXPECT_EQ(layer->max_cell_writes(), 2);
  EXPECT_EQ(layer->SetDuplication(0).code(), absl::StatusCode::kInvalidArgument);

  c.sign_mode = SignMode::kDifferential;
  auto differential = ReramLayer::Create(c, 512, 512);
  EXPECT_EQ(differential->Program(w.data())->cell_writes, 512LL * 512 * 4 * 2);
}

TEST(ReramLayerTest, ReprogrammingPastEnduranceFailsNamingTheCrossbar) {
  ReramConfig c;
  c.endurance_writes = 3;
  auto layer = ReramLayer::Create(c, 64, 64);
  std::vector<float> w(64 * 64, 0.5f);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(layer->Program(w.data()).ok());
  auto fourth = layer->Program(w.data());
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(fourth.status().message()),
              ::testing::HasSubstr("crossbar 0 (tile 0) would exceed its endurance"));
  EXPECT_EQ(layer->max_cell_writes(), 3);  // nothing was written
}

TEST(ReramLayerTest, ReadsAreCostedByTheNeuroSimModel) {
  const Data d = MakeData(4, 256, 64, 4);
  ReramConfig c;
  auto layer = ReramLayer::Create(c, d.k, d.n);
  ASSERT_TRUE(layer->Program(d.w.data()).ok());
  std::vector<float> y(d.batch * d.n), gx(d.batch * d.k);
  auto r = layer->Forward(d.x.data(), d.batch, y.data());
  ASSERT_TRUE(r.ok());
  // 2 row blocks x 1 col block x 4 slices = 8 crossbars.
  EXPECT_EQ(layer->crossbars(), 8);
  EXPECT_EQ(r->crossbar_activations, 4 * 8 * 8);
  // Every column of every subarray per bit-plane per input vector.
  EXPECT_EQ(r->adc_conversions, 4 * 8 * 64 * 4 * 2);
  const ReramReadCost forward = ReramLayerReadCost(c, d.batch, d.k, d.n);
  EXPECT_DOUBLE_EQ(r->latency_s, forward.latency_s);
  EXPECT_DOUBLE_EQ(r->energy_j, forward.energy_j);
  EXPECT_DOUBLE_EQ(r->adc_energy_j, forward.adc_j);
  EXPECT_EQ(r->cell_writes, 0);
  // The transposed read is the layer read the other way round.
  std::vector<float> g(d.batch * d.n, 0.5f);
  auto t = layer->Transposed(g.data(), d.batch, gx.data());
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->latency_s, ReramLayerReadCost(c, d.batch, d.n, d.k).latency_s);
  // Copies split the vectors: faster, same energy.
  ASSERT_TRUE(layer->SetDuplication(2).ok());
  ASSERT_TRUE(layer->Program(d.w.data()).ok());
  auto twice = layer->Forward(d.x.data(), d.batch, y.data());
  EXPECT_LT(twice->latency_s, r->latency_s);
  EXPECT_DOUBLE_EQ(twice->energy_j, r->energy_j);
}

TEST(ReramLayerTest, ProgrammingNoiseIsSeededAndAddsError) {
  const Data d = MakeData(8, 128, 32, 5);
  auto run = [&](double sigma, uint64_t seed) {
    ReramConfig c = Generous(ReramNumerics::kFast);
    c.program_noise_sigma = sigma;
    c.seed = seed;
    auto layer = ReramLayer::Create(c, d.k, d.n);
    EXPECT_TRUE(layer->Program(d.w.data()).ok());
    std::vector<float> y(d.batch * d.n);
    EXPECT_TRUE(layer->Forward(d.x.data(), d.batch, y.data()).ok());
    return y;
  };
  const std::vector<float> ref = Reference(d, false);
  const auto clean = run(0, 1), a = run(0.2, 1), b = run(0.2, 1), other = run(0.2, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  EXPECT_GT(Rms(a, ref), 2 * Rms(clean, ref));
}

TEST(ReramLayerTest, ReadBeforeProgramAndBadConfigAreErrors) {
  auto layer = ReramLayer::Create(ReramConfig(), 8, 8);
  std::vector<float> x(8), y(8);
  EXPECT_EQ(layer->Forward(x.data(), 1, y.data()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ReramConfig bad;
  bad.cell_bits = 0;
  EXPECT_EQ(ReramLayer::Create(bad, 8, 8).status().message(),
            "reram cell_bits must be in 1..8, got 0");
}

}  // namespace
}  // namespace hpt
