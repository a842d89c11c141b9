#include "workers/calibrate/host_calibration.h"

#include <algorithm>

#include "workers/calibrate/best_time.h"

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

// Host seconds a view `view` of a 4 x 4 tensor that needs no gradients
// takes, from a cycle of `views` of them.
template <typename V>
double ViewS(const torch::Device& device, int views, V view) {
  torch::Tensor x = torch::ones({4, 4}, torch::TensorOptions().device(device));
  const double s = BestS(device, 5, [&] {
    torch::Tensor y = x;
    for (int i = 0; i < views; ++i) y = view(y);
  });
  return s / double(views);
}

}  // namespace

HostCosts MeasureHostCosts(const torch::Device& device, int ops) {
  HostCosts h;
  h.dispatch_s = DispatchS(device, ops, /*history=*/false);
  h.history_s = std::max(0.0, DispatchS(device, ops, /*history=*/true) - h.dispatch_s);
  // An op of the program's that launches no kernel: a `view`, which the
  // kernel recorder takes for one such op and no frame
  // (kernel_recorder_test), so the model prices the cycle at exactly this.
  h.host_op_s = ViewS(device, ops, [](const torch::Tensor& y) { return y.view({4, 4}); });
  // A dispatcher frame that launches nothing: a whole transpose (the op
  // and the as_strided inside it; docs/cost-model.md says why).
  h.frame_s = ViewS(device, ops, [](const torch::Tensor& y) { return y.transpose(0, 1); });
  h.node_s = NodeS(device, ops / 4, h.dispatch_s);
  return h;
}

HostCosts LessDisturbed(const HostCosts& a, const HostCosts& b) {
  return b.dispatch_s < a.dispatch_s ? b : a;
}

}  // namespace hpt
