// Bf16Autocast: ops run under bf16 autocast on `device`'s type while it
// lives, as `torch.autocast(device_type, dtype=torch.bfloat16)` does in
// Python: products and attention in bf16, reductions and losses in fp32,
// weights untouched. Disabled (a no-op) when `enabled` is false.
//
//   { Bf16Autocast autocast(device, session.bf16); loss = Forward(x); }
//   loss.backward();  // outside, as with torch.autocast
#ifndef HPT_WORKERS_BF16_AUTOCAST_H_
#define HPT_WORKERS_BF16_AUTOCAST_H_

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace hpt {

class Bf16Autocast {
 public:
  Bf16Autocast(const torch::Device& device, bool enabled)
      : type_(device.type()), enabled_(enabled) {
    if (!enabled_) return;
    was_enabled_ = at::autocast::is_autocast_enabled(type_);
    was_dtype_ = at::autocast::get_autocast_dtype(type_);
    at::autocast::set_autocast_dtype(type_, at::kBFloat16);
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::increment_nesting();
  }
  ~Bf16Autocast() {
    if (!enabled_) return;
    // The casts cached for this region go with it.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(type_, was_enabled_);
    at::autocast::set_autocast_dtype(type_, was_dtype_);
  }
  Bf16Autocast(const Bf16Autocast&) = delete;
  Bf16Autocast& operator=(const Bf16Autocast&) = delete;

 private:
  at::DeviceType type_;
  bool enabled_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace hpt

#endif  // HPT_WORKERS_BF16_AUTOCAST_H_
