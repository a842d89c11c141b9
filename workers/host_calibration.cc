#include "workers/host_calibration.h"

#include <algorithm>

#include "workers/best_time.h"

namespace hpt {
namespace {

// Host seconds of an element-wise op from a cycle of `ops` small ones
// issued back to back, on a tensor that needs gradients (`history`: each
// records autograd history) or one that does not.
double DispatchS(const torch::Device& device, int ops, bool history) {
  torch::Tensor x =
      torch::ones({4}, torch::TensorOptions().device(device).requires_grad(history));
  const double s = BestS(device, 5, [&] {
    torch::Tensor y = x;
    for (int i = 0; i < ops / 5; ++i) {
      y = torch::relu(y.mul(1.0001).add(1e-4).neg().neg());
    }
  });
  return s / double(ops / 5 * 5);
}

// Host seconds the backward engine spends on a node beyond its one kernel
// (`dispatch_s`): the backward of a chain of `nodes` relus of a small
// tensor, a node each. A graph runs backward once, so each run builds its
// own, untimed.
double NodeS(const torch::Device& device, int nodes, double dispatch_s) {
  torch::Tensor x =
      torch::ones({4}, torch::TensorOptions().device(device).requires_grad(true));
  torch::Tensor y;
  const double s = BestS(
      device, 5,
      [&] {
        y = x;
        for (int i = 0; i < nodes; ++i) y = torch::relu(y);
        y = y.sum();
      },
      [&] { y.backward(); });
  return std::max(0.0, s / double(nodes) - dispatch_s);
}

// Host seconds of a dispatcher frame that launches nothing: a view (of a
// tensor that needs no gradients), from a cycle of `frames` transposes.
double FrameS(const torch::Device& device, int frames) {
  torch::Tensor x = torch::ones({4, 4}, torch::TensorOptions().device(device));
  const double s = BestS(device, 5, [&] {
    torch::Tensor y = x;
    for (int i = 0; i < frames; ++i) y = y.transpose(0, 1);
  });
  return s / double(frames);
}

// Host seconds of an op of the program's that launches no kernel, from a
// cycle of `ops` views of a tensor that needs no gradients: the kernel
// recorder takes each for one host op and no frame (kernel_recorder_test),
// so the model prices the cycle at exactly this.
double HostOpS(const torch::Device& device, int ops) {
  torch::Tensor x = torch::ones({4, 4}, torch::TensorOptions().device(device));
  const double s = BestS(device, 5, [&] {
    torch::Tensor y = x;
    for (int i = 0; i < ops; ++i) y = y.view({4, 4});
  });
  return s / double(ops);
}

}  // namespace

HostCosts MeasureHostCosts(const torch::Device& device, int ops) {
  HostCosts h;
  h.dispatch_s = DispatchS(device, ops, /*history=*/false);
  h.history_s = std::max(0.0, DispatchS(device, ops, /*history=*/true) - h.dispatch_s);
  h.host_op_s = HostOpS(device, ops);
  h.frame_s = FrameS(device, ops);
  h.node_s = NodeS(device, ops / 4, h.dispatch_s);
  return h;
}

}  // namespace hpt
