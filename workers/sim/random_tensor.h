// Tests' random tensors: normal values of a given spread, the same for the
// same seed.
//
//   HostTensor w = RandomTensor({8, 10}, /*seed=*/1, /*scale=*/0.3f);
#ifndef HPT_WORKERS_SIM_RANDOM_TENSOR_H_
#define HPT_WORKERS_SIM_RANDOM_TENSOR_H_

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "common/host_tensor.h"

namespace hpt {

// A tensor of `shape` with values drawn from N(0, scale^2), seeded by `seed`.
inline HostTensor RandomTensor(std::vector<int64_t> shape, uint32_t seed, float scale) {
  HostTensor t(std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, scale);
  for (float& v : t.data) v = normal(rng);
  return t;
}

}  // namespace hpt

#endif  // HPT_WORKERS_SIM_RANDOM_TENSOR_H_
