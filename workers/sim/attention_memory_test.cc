// A training forward of attention over more tokens than the machine can
// keep weights for is refused with the sizes and the fix, before anything
// is allocated: the worker goes on serving.
#include <cstdint>
#include <map>
#include <string>

#include "devices/work_cost.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/sim/segment_graph.h"

namespace hpt {
namespace {

using ::testing::HasSubstr;

SegmentSpec AttentionOnly() {
  SegmentSpec spec;
  spec.set_name("attn");
  spec.add_inputs("x");
  spec.add_outputs("y");
  SegmentOp* at = spec.add_ops();
  at->set_type(SegmentOp::ATTENTION);
  for (int i = 0; i < 3; ++i) at->add_inputs("x");
  at->set_output("y");
  at->set_num_heads(2);
  return spec;
}

TEST(AttentionMemoryTest, WeightsPastTheMachinesMemoryAreRefusedNotAllocated) {
  DeviceNode node;
  node.systolic.rows = node.systolic.cols = 8;
  DeviceNode cost_node;
  CostBuilder cost(cost_node);
  std::map<std::string, HostTensor> no_params;
  auto graph = SegmentGraph::Create(node, AttentionOnly(), no_params, &cost);
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 200,000 tokens of width 8 (6.4 MB) ask for 2 x 200,000^2 floats (320 GB)
  // of attention weights: more than any machine this runs on.
  HostTensor x({1, 200000, 8});
  SegmentGraph::Saved saved;
  auto y = (*graph)->Forward({{"x", x}}, 1, &cost, &saved);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(y.status().message(),
              HasSubstr("attention over 200000 tokens keeps 320.0 GB of weights for its "
                        "backward (batch 1 x 2 heads x 200000^2 floats) and this worker has "));
  EXPECT_THAT(y.status().message(),
              HasSubstr("GB left: lower training.batch_size, or give each sample fewer tokens "
                        "(stations)"));
  // A small one still trains.
  HostTensor small({2, 5, 8});
  for (size_t i = 0; i < small.data.size(); ++i) small.data[i] = float(i % 7) * 0.1f;
  EXPECT_TRUE((*graph)->Forward({{"x", small}}, 1, &cost, &saved).ok());
}

}  // namespace
}  // namespace hpt
