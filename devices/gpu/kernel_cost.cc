#include "devices/gpu/kernel_cost.h"

#include <algorithm>
#include <iterator>

namespace hpt {

bool LaunchesNoKernel(std::string_view op) {
  // Views, aliasing and metadata: they change strides or sizes, not data.
  static constexpr std::string_view kNoKernel[] = {
      "aten::view",      "aten::_unsafe_view", "aten::reshape",  "aten::t",
      "aten::transpose", "aten::permute",      "aten::expand",   "aten::expand_as",
      "aten::as_strided", "aten::slice",       "aten::select",   "aten::unsqueeze",
      "aten::squeeze",   "aten::alias",        "aten::detach",   "aten::detach_",
      "aten::lift",      "aten::lift_fresh",   "aten::empty",    "aten::empty_like",
      "aten::empty_strided", "aten::resize_",  "aten::set_",     "aten::to",
      "aten::_to_copy",  "aten::contiguous",   "aten::view_as",  "aten::flatten",
      "aten::unflatten", "aten::split",        "aten::chunk",    "aten::unbind",
      "aten::narrow",    "aten::requires_grad_", "aten::resolve_conj",
      "aten::resolve_neg", "aten::_reshape_alias", "aten::conj", "aten::_conj",
      "aten::numpy_T",   "aten::mT",           "aten::diagonal", "aten::movedim",
      "aten::swapaxes",  "aten::unsqueeze_", "detach_"};
  return std::find(std::begin(kNoKernel), std::end(kNoKernel), op) != std::end(kNoKernel);
}

GpuKernelTally::GpuKernelTally(const GpuSpec& gpu, GpuPrecision precision, double launch_s,
                               const GpuKernelModel& model)
    : gpu_(gpu), launch_s_(launch_s) {
  double peak = gpu.fp32_flops;
  if (precision == GpuPrecision::kTf32 && gpu.tf32_flops > 0) peak = gpu.tf32_flops;
  if (precision == GpuPrecision::kBf16 && gpu.bf16_flops > 0) peak = gpu.bf16_flops;
  compute_ = peak * model.compute_share;
  bandwidth_ = gpu.memory_bw * model.memory_share;
}

void GpuKernelTally::Add(double flops, double bytes, double count) {
  const double work_s = std::max(flops / compute_, bytes / bandwidth_);
  const double t = std::max(launch_s_, work_s);
  cost_.kernels += int64_t(count);
  cost_.time_s += t * count;
  busy_s_ += work_s * count;
  cost_.flops += flops * count;
  cost_.bytes += bytes * count;
  if (launch_s_ > work_s) {
    cost_.launch_bound_kernels += int64_t(count);
    cost_.launch_bound_s += t * count;
  }
}

GpuStepCost GpuKernelTally::Finish(double extra_s) const {
  GpuStepCost c = cost_;
  c.time_s += extra_s;
  c.energy_j = gpu_.idle_power_w * c.time_s + (gpu_.load_power_w - gpu_.idle_power_w) * busy_s_;
  return c;
}

GpuStepCost CostKernels(const GpuSpec& gpu, GpuPrecision precision,
                        const std::vector<GpuKernel>& kernels,
                        const GpuKernelModel& model) {
  GpuKernelTally tally(gpu, precision, model.launch_s, model);
  for (const GpuKernel& k : kernels) {
    if (!LaunchesNoKernel(k.op)) tally.Add(k.flops, k.bytes);
  }
  return tally.Finish();
}

}  // namespace hpt
