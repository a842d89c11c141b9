#include "workers/sim/device_node.h"

#include <chrono>

#include "devices/reram/reram_cost.h"
#include "devices/reram/reram_layer.h"
#include "devices/systolic/systolic_array.h"
#include "devices/vector_unit.h"
#include "devices/work_cost.h"
#include "gtest/gtest.h"

namespace hpt {
namespace {

TEST(CostBuilderTest, RecordsTheWorkAndCostsItOnTheOnePath) {
  // q and k read the same input from tiles of their own: together they
  // take as long as the longer; a read outside the group adds in full.
  DeviceNode node;
  node.kind = DeviceKind::reram;
  node.SetCostSettings();
  auto q = ReramLayer::Create(node.reram, 64, 64);
  auto k = ReramLayer::Create(node.reram, 64, 256);
  ASSERT_TRUE(q.ok() && k.ok());
  CostBuilder cost(node);
  cost.ReramRead("q.weight", *q, 10, false, "forward:h");
  cost.ReramRead("k.weight", *k, 10, false, "forward:h");
  cost.ReramRead("q.weight", *q, 10, true);
  cost.Gemm(10, 8, 64, 2);
  cost.Elementwise(640);
  const CostReport r = cost.Finish(std::chrono::steady_clock::now());
  ASSERT_EQ(r.work().items_size(), 5);
  EXPECT_EQ(r.work().items(1).reram_read().layer(), "k.weight");
  EXPECT_EQ(r.work().items(1).reram_read().n(), 256);
  EXPECT_EQ(r.work().settings().at("reram_adc_bits"), "5");
  const CostReport again = CostTaskWork(r.work(), node.CostConfig());
  EXPECT_EQ(r.simulated_s(), again.simulated_s());
  EXPECT_EQ(r.energy_j(), again.energy_j());
  const double longer = ReramLayerReadCost(node.reram, 10, 64, 256).latency_s;
  const double transposed = ReramLayerReadCost(node.reram, 10, 64, 64).latency_s;
  SystolicConfig digital = node.systolic;
  digital.clock_hz = node.reram.clock_hz;
  const double gemm = 2 * SimulateGemm(digital, {10, 8, 64}).latency_s;
  const double vector = ElementwiseCost(128, node.reram.clock_hz, 640).latency_s;
  EXPECT_DOUBLE_EQ(r.simulated_s(), longer + transposed + gemm + vector);
}

}  // namespace
}  // namespace hpt
