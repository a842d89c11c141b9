// Attention over more tokens than a whole head's weights fit in 64 MiB
// trains a block of query rows at a time: the segment's forward and
// backward equal the whole heads' products, with nothing of tokens^2 per
// pair kept.
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "devices/work_cost.h"
#include "gtest/gtest.h"
#include "workers/sim/attention_head.h"
#include "workers/sim/segment_graph.h"

namespace hpt {
namespace {

constexpr int64_t kTokens = 4500, kHeads = 2, kWidth = 4, kHd = kWidth / kHeads;

SegmentSpec AttentionOnly() {
  SegmentSpec spec;
  spec.set_name("attn");
  spec.add_inputs("x");
  spec.add_outputs("y");
  SegmentOp* at = spec.add_ops();
  at->set_type(SegmentOp::ATTENTION);
  for (int i = 0; i < 3; ++i) at->add_inputs("x");
  at->set_output("y");
  at->set_num_heads(kHeads);
  return spec;
}

HostTensor Random(uint32_t seed) {
  HostTensor t({1, kTokens, kWidth});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& e : t.data) e = u(rng);
  return t;
}

TEST(AttentionMemoryTest, ManyTokensTrainInRowBlocksAndEqualWholeHeads) {
  ASSERT_LT(AttentionRowBlock(kTokens), kTokens);  // two blocks of rows
  DeviceNode node;
  node.systolic.rows = node.systolic.cols = 8;
  DeviceNode cost_node;
  CostBuilder cost(cost_node);
  std::map<std::string, HostTensor> no_params;
  auto graph = SegmentGraph::Create(node, AttentionOnly(), no_params, &cost);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const HostTensor x = Random(1), gy = Random(2);
  SegmentGraph::Saved saved;
  auto y = (*graph)->Forward({{"x", x}}, 1, &cost, &saved);
  ASSERT_TRUE(y.ok()) << y.status();
  auto grads = (*graph)->Backward(saved, {{"y", gy}}, &cost);
  ASSERT_TRUE(grads.ok()) << grads.status();
  const HostTensor& gx = grads->at("x");

  // Each head whole, q = k = v = x: dx = dq + dk + dv.
  std::vector<float> wy(x.data.size()), gq(x.data.size()), gk(x.data.size()), gv(x.data.size());
  std::vector<float> kept(kTokens * kTokens);
  AttentionScratch scratch;
  for (int64_t h = 0; h < kHeads; ++h) {
    const float* xh = x.data.data() + h * kHd;
    const AttentionHead head{
        node, xh, xh, xh, kTokens, kHd, kWidth, float(1.0 / std::sqrt(double(kHd))), 0.0, 0, 0};
    HeadForward(head, kTokens, kept.data(), wy.data() + h * kHd, scratch);
    HeadBackward(head, kTokens, kept.data(), gy.data.data() + h * kHd, gq.data() + h * kHd,
                 gk.data() + h * kHd, gv.data() + h * kHd, scratch);
  }
  double largest = 0;
  for (size_t e = 0; e < gx.data.size(); ++e) {
    largest = std::max(largest, std::fabs(double(gq[e]) + gk[e] + gv[e]));
  }
  ASSERT_GT(largest, 0);
  for (size_t e = 0; e < x.data.size(); ++e) {
    EXPECT_NEAR(y->at("y").data[e], wy[e], 1e-6) << e;
    EXPECT_NEAR(gx.data[e], gq[e] + gk[e] + gv[e], 1e-5 * largest) << e;
  }
}

}  // namespace
}  // namespace hpt
