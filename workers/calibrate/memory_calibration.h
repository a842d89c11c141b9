// The memory side of the calibration (device_calibration.h): the
// element-wise op every bandwidth table times, its tables by bytes moved
// (cached, in place, streamed) and the pool that streamed tables, the
// GEMM grid's among them, read their operands from. Includes LibTorch.
//
//   StreamPool pool(device, cache_bytes);
//   auto rates = MemoryRates(device, /*quick=*/true, EmptyElementwiseS(device, false), &pool);
#ifndef HPT_WORKERS_MEMORY_CALIBRATION_H_
#define HPT_WORKERS_MEMORY_CALIBRATION_H_

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace hpt {

// Operands to cycle through so that each is read from memory: views into
// one buffer over twice the cache (filled once, not once per shape). The
// pool keeps its place: each shape's views begin where the last shape's
// reads stopped, so none starts on what the last one left in the cache.
class StreamPool {
 public:
  StreamPool(const torch::Device& device, double cache_bytes)
      : buffer_(torch::randn({int64_t(std::max(2 * cache_bytes, 64e6) / 4)},
                             torch::TensorOptions().device(device))) {}
  // Views of `shape` at spaced offsets of the buffer, as many as fit, from
  // the pool's place on; an operand over half the buffer is read from
  // memory anyway: two of its own.
  std::vector<torch::Tensor> Operands(const std::vector<int64_t>& shape) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    if (2 * numel > buffer_.numel()) {
      auto opts = torch::TensorOptions().device(buffer_.device());
      return {torch::randn(shape, opts), torch::randn(shape, opts)};
    }
    const int64_t count = std::min<int64_t>(buffer_.numel() / numel, 4096);
    const int64_t first = (place_ + numel - 1) / numel;  // the first view at or past the place
    std::vector<torch::Tensor> views;
    for (int64_t i = 0; i < count; ++i) {
      views.push_back(buffer_.narrow(0, ((first + i) % count) * numel, numel).view(shape));
    }
    return views;
  }
  // The place moves to `next`, the first operand not read (one of the
  // pool's views; an operand of its own leaves the place where it was).
  void ReadUpTo(const torch::Tensor& next) {
    if (next.is_alias_of(buffer_)) place_ = next.storage_offset();
  }

 private:
  torch::Tensor buffer_;
  int64_t place_ = 0;  // element where the next shape's views begin
};

// One operand of `shape` (cached), or the pool's views (streamed).
std::vector<torch::Tensor> Operands(const torch::Device& device, const std::vector<int64_t>& shape,
                                    StreamPool* streamed);

// The element-wise op MemoryRates times: `x` scaled into `out`, or in
// place (the `i`th time: up and down in turn, so its values stay put).
void ScaleOnce(const torch::Tensor& x, torch::Tensor& out, bool in_place, int i);

// Seconds of that op (`in_place` or not) on one element: its dispatch,
// with no work to speak of. On CUDA, none: the tables there hold kernels'
// device time (DeviceBestS).
double EmptyElementwiseS(const torch::Device& device, bool in_place);

// Achieved bandwidth of an element-wise op by bytes moved (input read,
// output written), from cache-sized to DRAM-sized working sets, beyond
// `empty_s` (EmptyElementwiseS); `streamed`: each repetition reads another
// input of a pool that no cache holds; `in_place`: the op writes its input
// (cached; to 34 MB moved when quick).
std::vector<std::pair<double, double>> MemoryRates(const torch::Device& device, bool quick,
                                                   double empty_s, StreamPool* streamed,
                                                   bool in_place = false);

}  // namespace hpt

#endif  // HPT_WORKERS_MEMORY_CALIBRATION_H_
