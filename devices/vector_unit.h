// The digital vector unit beside an array (the systolic array's, or a
// ReRAM node's): element-wise work such as residual adds, ReLU, dropout,
// LayerNorm and softmax, one operation per lane per cycle.
//
//   VectorUnitCost c = ElementwiseCost(/*lanes=*/128, /*clock_hz=*/1e9, ops);
#ifndef HPT_DEVICES_VECTOR_UNIT_H_
#define HPT_DEVICES_VECTOR_UNIT_H_

namespace hpt {

// Energy of one element-wise operation: a 32-bit float add, 0.9 pJ
// (Horowitz, "Computing's energy problem", ISSCC 2014, 45 nm).
inline constexpr double kElementwiseOpEnergyJ = 0.9e-12;

struct VectorUnitCost {
  double latency_s = 0;
  double energy_j = 0;
};

VectorUnitCost ElementwiseCost(double lanes, double clock_hz, double ops,
                               double energy_per_op_j = kElementwiseOpEnergyJ);

}  // namespace hpt

#endif  // HPT_DEVICES_VECTOR_UNIT_H_
