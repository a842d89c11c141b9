#include "devices/vector_unit.h"

#include <cmath>

namespace hpt {

VectorUnitCost ElementwiseCost(double lanes, double clock_hz, double ops,
                               double energy_per_op_j) {
  VectorUnitCost c;
  c.latency_s = std::ceil(ops / lanes) / clock_hz;
  c.energy_j = ops * energy_per_op_j;
  return c;
}

}  // namespace hpt
