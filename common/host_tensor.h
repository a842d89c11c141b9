// HostTensor: a dense row-major float32 array with a shape, for code that
// moves data without LibTorch (data sets, the coordinator, the wire codec).
//
//   HostTensor x({batch, tokens, features});
//   x.at({b, t, f}) = 1.0f;
#ifndef HPT_COMMON_HOST_TENSOR_H_
#define HPT_COMMON_HOST_TENSOR_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace hpt {

struct HostTensor {
  HostTensor() = default;
  explicit HostTensor(std::vector<int64_t> shape_in)
      : shape(std::move(shape_in)), data(NumElements(shape), 0.0f) {}

  static int64_t NumElements(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t num_elements() const { return NumElements(shape); }
  int64_t num_bytes() const { return num_elements() * int64_t(sizeof(float)); }
  std::string ShapeString() const;

  std::vector<int64_t> shape;
  std::vector<float> data;
};

}  // namespace hpt

#endif  // HPT_COMMON_HOST_TENSOR_H_
