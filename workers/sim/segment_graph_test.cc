// SegmentGraph: a simulated device's segment of ops, forward and backward,
// checked against finite differences and by hand.
#include "workers/sim/segment_graph.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/sim/random_tensor.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

// A systolic segment with LayerNorm, attention with dropout on its weights
// and a dropout op: the backward (which rebuilds the masks from the seed and
// x-hat from the input) is the derivative of the forward with the same
// seed, checked along a random direction by central differences.
SegmentSpec NormAttentionDropout(double attention_dropout, double dropout) {
  SegmentSpec spec;
  spec.set_name("block");
  spec.add_inputs("x");
  spec.add_outputs("y");
  SegmentOp* ln = spec.add_ops();
  ln->set_type(SegmentOp::LAYER_NORM);
  ln->set_weight("gamma");
  ln->set_bias("beta");
  ln->set_trainable(true);
  ln->add_inputs("x");
  ln->set_output("n");
  SegmentOp* at = spec.add_ops();
  at->set_type(SegmentOp::ATTENTION);
  for (int i = 0; i < 3; ++i) at->add_inputs("n");
  at->set_output("a");
  at->set_num_heads(2);
  at->set_dropout(attention_dropout);
  SegmentOp* dr = spec.add_ops();
  dr->set_type(SegmentOp::DROPOUT);
  dr->add_inputs("a");
  dr->set_output("y");
  dr->set_dropout(dropout);
  return spec;
}

std::unique_ptr<SegmentGraph> Block(double attention_dropout, double dropout) {
  DeviceNode node;
  node.systolic.rows = node.systolic.cols = 8;
  std::map<std::string, HostTensor> params = {{"gamma", RandomTensor({8}, 11, 0.5f)},
                                              {"beta", RandomTensor({8}, 12, 0.5f)}};
  for (float& v : params.at("gamma").data) v += 1.0f;
  DeviceNode cost_node;
  CostBuilder cost(cost_node);
  auto graph =
      SegmentGraph::Create(node, NormAttentionDropout(attention_dropout, dropout), params, &cost);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::move(*graph);
}

TEST(SegmentGraphTest, DropoutAndLayerNormBackwardIsTheForwardsDerivative) {
  auto graph = Block(0.25, 0.3);
  const HostTensor x = RandomTensor({3, 5, 8}, 13, 1.0f);
  const HostTensor r = RandomTensor({3, 5, 8}, 14, 1.0f);  // loss = sum(y * r)
  const HostTensor dir = RandomTensor({3, 5, 8}, 15, 1.0f);
  constexpr uint64_t kSeed = 77;
  auto loss = [&](const HostTensor& in) {
    DeviceNode cost_node;
    CostBuilder cost(cost_node);
    SegmentGraph::Saved saved;
    auto y = graph->Forward({{"x", in}}, kSeed, &cost, &saved);
    EXPECT_TRUE(y.ok()) << y.status();
    double l = 0;
    for (size_t e = 0; e < r.data.size(); ++e) l += double(y->at("y").data[e]) * r.data[e];
    return l;
  };
  DeviceNode cost_node;
  CostBuilder cost(cost_node);
  SegmentGraph::Saved saved;
  auto y = graph->Forward({{"x", x}}, kSeed, &cost, &saved);
  ASSERT_TRUE(y.ok()) << y.status();
  // About 30 % of the outputs are dropped, the rest scaled by 1 / 0.7.
  int zeros = 0;
  for (float v : y->at("y").data) zeros += v == 0.0f;
  EXPECT_GT(zeros, 0.15 * 120);
  EXPECT_LT(zeros, 0.45 * 120);
  auto grads = graph->Backward(saved, {{"y", r}}, &cost);
  ASSERT_TRUE(grads.ok()) << grads.status();
  double analytic = 0;
  for (size_t e = 0; e < dir.data.size(); ++e) {
    analytic += double(grads->at("x").data[e]) * dir.data[e];
  }
  constexpr float kStep = 1e-2f;
  HostTensor plus = x, minus = x;
  for (size_t e = 0; e < x.data.size(); ++e) {
    plus.data[e] += kStep * dir.data[e];
    minus.data[e] -= kStep * dir.data[e];
  }
  const double numeric = (loss(plus) - loss(minus)) / (2.0 * kStep);
  EXPECT_NEAR(analytic, numeric, 2e-3 * std::fabs(numeric) + 2e-3);
  // The same seed gives the same masks; another seed other masks.
  SegmentGraph::Saved again;
  EXPECT_EQ(graph->Forward({{"x", x}}, kSeed, &cost, &again)->at("y").data, y->at("y").data);
  EXPECT_NE(graph->Forward({{"x", x}}, kSeed + 1, &cost, &again)->at("y").data, y->at("y").data);
}

TEST(SegmentGraphTest, InferenceForwardEqualsTrainingForwardWithoutDropout) {
  auto graph = Block(0.0, 0.0);
  const HostTensor x = RandomTensor({4, 7, 8}, 16, 1.0f);
  DeviceNode cost_node;
  CostBuilder cost(cost_node);
  SegmentGraph::Saved saved;
  auto trained = graph->Forward({{"x", x}}, 5, &cost, &saved);
  auto inferred = graph->Forward({{"x", x}}, 5, &cost, nullptr);
  ASSERT_TRUE(trained.ok() && inferred.ok());
  EXPECT_EQ(trained->at("y").data, inferred->at("y").data);
  // Softmax rows sum to one, so attention over identical keys and values
  // returns those values: a check of the vectorised exp and the sum.
  HostTensor same({1, 6, 8});
  for (int64_t t = 0; t < 6; ++t) {
    for (int64_t c = 0; c < 8; ++c) same.data[t * 8 + c] = float(c) - 3.5f;
  }
  auto out = graph->Forward({{"x", same}}, 5, &cost, nullptr);
  ASSERT_TRUE(out.ok());
  const HostTensor gamma = RandomTensor({8}, 11, 0.5f), beta = RandomTensor({8}, 12, 0.5f);
  for (int64_t t = 0; t < 6; ++t) {
    for (int64_t c = 0; c < 8; ++c) {
      const double xhat = (c - 3.5) / std::sqrt(5.25 + 1e-5);
      EXPECT_NEAR(out->at("y").data[t * 8 + c], xhat * (gamma.data[c] + 1.0) + beta.data[c], 1e-5);
    }
  }
}

// CONCAT puts its inputs side by side along the last dimension, and its
// backward hands each input its own columns of the gradient (added to
// what the input's other reader, here an ADD, gives it).
TEST(SegmentGraphTest, ConcatSplitsItsGradientByColumns) {
  SegmentSpec spec;
  spec.set_name("skip");
  spec.add_inputs("a");
  spec.add_inputs("b");
  spec.add_outputs("y");
  SegmentOp* twice = spec.add_ops();
  twice->set_type(SegmentOp::ADD);
  twice->add_inputs("b");
  twice->add_inputs("b");
  twice->set_output("b2");
  SegmentOp* cat = spec.add_ops();
  cat->set_type(SegmentOp::CONCAT);
  cat->add_inputs("a");
  cat->add_inputs("b");
  cat->add_inputs("b2");
  cat->set_output("y");
  DeviceNode node;
  CostBuilder cost(node);
  std::map<std::string, HostTensor> no_params;
  auto graph = SegmentGraph::Create(node, spec, no_params, &cost);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const HostTensor a = RandomTensor({2, 3, 2}, 21, 1.0f), b = RandomTensor({2, 3, 1}, 22, 1.0f);
  SegmentGraph::Saved saved;
  auto y = (*graph)->Forward({{"a", a}, {"b", b}}, 1, &cost, &saved);
  ASSERT_TRUE(y.ok()) << y.status();
  const HostTensor& out = y->at("y");
  ASSERT_EQ(out.shape, (std::vector<int64_t>{2, 3, 4}));
  for (int64_t r = 0; r < 6; ++r) {
    EXPECT_EQ(out.data[4 * r], a.data[2 * r]);
    EXPECT_EQ(out.data[4 * r + 1], a.data[2 * r + 1]);
    EXPECT_EQ(out.data[4 * r + 2], b.data[r]);
    EXPECT_EQ(out.data[4 * r + 3], 2 * b.data[r]);
  }
  HostTensor g({2, 3, 4});
  for (size_t e = 0; e < g.data.size(); ++e) g.data[e] = float(e);
  auto grads = (*graph)->Backward(saved, {{"y", g}}, &cost);
  ASSERT_TRUE(grads.ok()) << grads.status();
  for (int64_t r = 0; r < 6; ++r) {
    EXPECT_EQ(grads->at("a").data[2 * r], float(4 * r));
    EXPECT_EQ(grads->at("a").data[2 * r + 1], float(4 * r + 1));
    // Its own column, and twice the column of b + b.
    EXPECT_EQ(grads->at("b").data[r], float(4 * r + 2) + 2 * float(4 * r + 3));
  }
  auto mismatched =
      (*graph)->Forward({{"a", a}, {"b", RandomTensor({3, 2, 1}, 23, 1.0f)}}, 1, &cost, nullptr);
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mismatched.status().message()),
              HasSubstr("concatenating 'b' [3, 2, 1] beside 'a' [2, 3, 2]"));
  // Scalars have no last dimension to join along.
  const HostTensor scalar_in{std::vector<int64_t>{}};
  auto scalar = (*graph)->Forward({{"a", scalar_in}, {"b", scalar_in}}, 1, &cost, nullptr);
  EXPECT_EQ(scalar.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hpt
