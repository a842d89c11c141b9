// HostTensor: a dense row-major float32 array with a shape, for code that
// moves data without LibTorch (data sets, the coordinator, the wire codec).
//
//   HostTensor x({batch, tokens, features});
//   x.at({b, t, f}) = 1.0f;
#ifndef HPT_COMMON_HOST_TENSOR_H_
#define HPT_COMMON_HOST_TENSOR_H_

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace hpt {

// Float storage for HostTensor: a vector-like array of floats held in a
// std::string's buffer, so a tensor can take a wire message's bytes, or
// give its own to one, by move instead of copying them (tensor_codec.h).
// The buffer comes from operator new: aligned for floats. New elements
// start at 0.
class FloatBuffer {
 public:
  using value_type = float;
  using iterator = float*;
  using const_iterator = const float*;
  using size_type = size_t;

  FloatBuffer() = default;
  explicit FloatBuffer(size_t n, float value = 0.0f) { assign(n, value); }
  FloatBuffer(std::initializer_list<float> values) { assign(values.begin(), values.end()); }
  FloatBuffer(const std::vector<float>& values) {  // NOLINT: vector-like
    assign(values.data(), values.data() + values.size());
  }

  // The bytes, moved in or out (their size is a multiple of 4).
  static FloatBuffer FromBytes(std::string&& bytes) {
    FloatBuffer b;
    b.bytes_ = std::move(bytes);
    return b;
  }
  std::string TakeBytes() && { return std::move(bytes_); }

  float* data() { return reinterpret_cast<float*>(bytes_.data()); }
  const float* data() const { return reinterpret_cast<const float*>(bytes_.data()); }
  size_t size() const { return bytes_.size() / sizeof(float); }
  bool empty() const { return bytes_.empty(); }
  float& operator[](size_t i) { return data()[i]; }
  float operator[](size_t i) const { return data()[i]; }
  float* begin() { return data(); }
  float* end() { return data() + size(); }
  const float* begin() const { return data(); }
  const float* end() const { return data() + size(); }

  void resize(size_t n) { bytes_.resize(n * sizeof(float), '\0'); }
  void assign(size_t n, float value) {
    bytes_.assign(n * sizeof(float), '\0');
    if (value != 0.0f) std::fill(begin(), end(), value);
  }
  void assign(const float* first, const float* last) {  // one pass
    bytes_.assign(reinterpret_cast<const char*>(first), size_t(last - first) * sizeof(float));
  }
  std::vector<float> ToVector() const { return std::vector<float>(begin(), end()); }

  friend bool operator==(const FloatBuffer& a, const FloatBuffer& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const FloatBuffer& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const FloatBuffer& a, const FloatBuffer& b) { return !(a == b); }

 private:
  std::string bytes_;
};

struct HostTensor {
  HostTensor() = default;
  explicit HostTensor(std::vector<int64_t> shape_in)
      : shape(std::move(shape_in)), data(size_t(NumElements(shape))) {}

  static int64_t NumElements(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t num_elements() const { return NumElements(shape); }
  int64_t num_bytes() const { return num_elements() * int64_t(sizeof(float)); }
  std::string ShapeString() const;

  std::vector<int64_t> shape;
  FloatBuffer data;
};

}  // namespace hpt

#endif  // HPT_COMMON_HOST_TENSOR_H_
