// A head's attention a block of query rows at a time: its backward is the
// forward's derivative, it equals the whole head's products, and a
// backward that makes the weights again gives the kept weights' bits.
#include "workers/sim/attention_head.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace hpt {
namespace {

constexpr int64_t kTokens = 7, kHd = 3, kStride = 5;  // the head: columns [0, 3)

std::vector<float> Random(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(kTokens * kStride);
  for (float& e : v) e = u(rng);
  return v;
}

struct Operands {
  std::vector<float> q = Random(1), k = Random(2), v = Random(3), gy = Random(4);
};

struct Result {
  std::vector<float> y, gq, gk, gv;
};

Result Attend(const Operands& o, int64_t row_block, bool keep, double dropout) {
  const DeviceNode node;
  const AttentionHead h{node,    o.q.data(), o.k.data(), o.v.data(),
                        kTokens, kHd,        kStride,    float(1.0 / std::sqrt(double(kHd))),
                        dropout, 11,         0};
  AttentionScratch scratch;
  std::vector<float> kept(keep ? kTokens * kTokens : 0);
  Result r;
  for (auto* out : {&r.y, &r.gq, &r.gk, &r.gv}) out->assign(kTokens * kStride, 0.0f);
  HeadForward(h, row_block, keep ? kept.data() : nullptr, r.y.data(), scratch);
  HeadBackward(h, row_block, keep ? kept.data() : nullptr, o.gy.data(), r.gq.data(), r.gk.data(),
               r.gv.data(), scratch);
  return r;
}

double Loss(const Operands& o, int64_t row_block, double dropout) {
  const Result r = Attend(o, row_block, false, dropout);
  double l = 0;
  for (size_t e = 0; e < r.y.size(); ++e) l += double(r.y[e]) * o.gy[e];
  return l;
}

TEST(AttentionHeadTest, RowBlocksBackwardIsTheForwardsDerivative) {
  for (double dropout : {0.0, 0.25}) {
    const Operands o;
    const Result r = Attend(o, 2, false, dropout);
    // Along a random direction of q, k and v together, by central
    // differences in the head's columns only.
    const std::vector<float> dq = Random(5), dk = Random(6), dv = Random(7);
    double analytic = 0;
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t c = 0; c < kHd; ++c) {
        const int64_t e = t * kStride + c;
        analytic += double(r.gq[e]) * dq[e] + double(r.gk[e]) * dk[e] + double(r.gv[e]) * dv[e];
      }
    }
    constexpr float kStep = 1e-2f;
    Operands plus = o, minus = o;
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t c = 0; c < kHd; ++c) {
        const int64_t e = t * kStride + c;
        plus.q[e] += kStep * dq[e], minus.q[e] -= kStep * dq[e];
        plus.k[e] += kStep * dk[e], minus.k[e] -= kStep * dk[e];
        plus.v[e] += kStep * dv[e], minus.v[e] -= kStep * dv[e];
      }
    }
    const double numeric = (Loss(plus, 2, dropout) - Loss(minus, 2, dropout)) / (2.0 * kStep);
    EXPECT_NEAR(analytic, numeric, 2e-3 * std::fabs(numeric) + 2e-3) << dropout;
    // Nothing is written outside the head's columns.
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t c = kHd; c < kStride; ++c) {
        const int64_t e = t * kStride + c;
        EXPECT_EQ(r.y[e], 0.0f);
        EXPECT_EQ(r.gq[e], 0.0f);
        EXPECT_EQ(r.gk[e], 0.0f);
        EXPECT_EQ(r.gv[e], 0.0f);
      }
    }
  }
}

TEST(AttentionHeadTest, RowBlocksGiveTheWholeHeadsValues) {
  const Operands o;
  for (double dropout : {0.0, 0.25}) {
    const Result whole = Attend(o, kTokens, true, dropout);
    for (int64_t block : {1, 2, 3, 6}) {
      const Result blocked = Attend(o, block, true, dropout);
      for (size_t e = 0; e < whole.y.size(); ++e) {
        EXPECT_NEAR(blocked.y[e], whole.y[e], 1e-6) << block << " y " << e;
        EXPECT_NEAR(blocked.gq[e], whole.gq[e], 1e-6) << block << " gq " << e;
        // dK and dV add the blocks' shares: another order of the same sums.
        EXPECT_NEAR(blocked.gk[e], whole.gk[e], 1e-5) << block << " gk " << e;
        EXPECT_NEAR(blocked.gv[e], whole.gv[e], 1e-5) << block << " gv " << e;
      }
    }
  }
}

TEST(AttentionHeadTest, RemadeWeightsGiveTheKeptWeightsBits) {
  const Operands o;
  for (double dropout : {0.0, 0.25}) {
    for (int64_t block : {int64_t{2}, kTokens}) {
      const Result kept = Attend(o, block, true, dropout);
      const Result remade = Attend(o, block, false, dropout);
      EXPECT_EQ(remade.y, kept.y);
      EXPECT_EQ(remade.gq, kept.gq);
      EXPECT_EQ(remade.gk, kept.gk);
      EXPECT_EQ(remade.gv, kept.gv);
    }
  }
}

TEST(AttentionHeadTest, HeadsRunWholeUpTo4096Tokens) {
  EXPECT_EQ(AttentionRowBlock(1), 1);
  EXPECT_EQ(AttentionRowBlock(300), 300);
  EXPECT_EQ(AttentionRowBlock(4096), 4096);
  // Past it, rows x tokens stays within 16 Mi floats (64 MiB).
  EXPECT_EQ(AttentionRowBlock(4097), 4095);
  EXPECT_EQ(AttentionRowBlock(12000), 1398);
  EXPECT_EQ(AttentionRowBlock(200000), 83);
  EXPECT_EQ(AttentionRowBlock(int64_t{1} << 26), 1);
}

}  // namespace
}  // namespace hpt
