// What reram_layer.cc and reram_read.cc, the two halves of ReramLayer,
// share and nothing else needs.
#ifndef HPT_DEVICES_RERAM_RERAM_LAYER_INTERNAL_H_
#define HPT_DEVICES_RERAM_RERAM_LAYER_INTERNAL_H_

#include <cstdint>

namespace hpt {
namespace reram_internal {

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Element-wise passes split over LibTorch's threads in chunks of this many.
inline constexpr int64_t kGrain = 1 << 16;

}  // namespace reram_internal
}  // namespace hpt

#endif  // HPT_DEVICES_RERAM_RERAM_LAYER_INTERNAL_H_
