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

GpuStepCost CostKernels(const GpuSpec& gpu, GpuPrecision precision,
                        const std::vector<GpuKernel>& kernels,
                        const GpuKernelModel& model) {
  double peak = gpu.fp32_flops;
  if (precision == GpuPrecision::kTf32 && gpu.tf32_flops > 0) peak = gpu.tf32_flops;
  if (precision == GpuPrecision::kBf16 && gpu.bf16_flops > 0) peak = gpu.bf16_flops;
  const double compute = peak * model.compute_share;
  const double bandwidth = gpu.memory_bw * model.memory_share;
  GpuStepCost c;
  double busy_s = 0;
  for (const GpuKernel& k : kernels) {
    if (LaunchesNoKernel(k.op)) continue;
    const double work_s = std::max(k.flops / compute, k.bytes / bandwidth);
    const double t = std::max(model.launch_s, work_s);
    ++c.kernels;
    c.time_s += t;
    busy_s += work_s;
    c.flops += k.flops;
    c.bytes += k.bytes;
    if (model.launch_s > work_s) {
      ++c.launch_bound_kernels;
      c.launch_bound_s += t;
    }
  }
  c.energy_j = gpu.idle_power_w * c.time_s +
               (gpu.load_power_w - gpu.idle_power_w) * busy_s;
  return c;
}

}  // namespace hpt
