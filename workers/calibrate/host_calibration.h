// The host's time per op, in the five parts of a profile's launch path
// (devices/gpu/roofline.h): dispatch_s, host_op_s, history_s, frame_s,
// node_s, each from a microbenchmark of small tensors on `device`. Part
// of the calibration (device_calibration.h); includes LibTorch.
//
//   HostCosts h = MeasureHostCosts(torch::Device(torch::kCPU), 4000);
#ifndef HPT_WORKERS_HOST_CALIBRATION_H_
#define HPT_WORKERS_HOST_CALIBRATION_H_

#include <torch/torch.h>

namespace hpt {

struct HostCosts {
  double dispatch_s = 0;  // an op that records no autograd history
  double host_op_s = 0;   // an op that launches no kernel (a view)
  double history_s = 0;   // what recording history adds to an op
  double frame_s = 0;     // a dispatcher frame that launches nothing
  double node_s = 0;      // the backward engine per node, beyond its kernel
};

// Each part from cycles of `ops` ops (frames; a quarter as many nodes).
HostCosts MeasureHostCosts(const torch::Device& device, int ops);

// Of two sets measured apart, the less disturbed: the one whose dispatch
// is the lesser. A shared host has spells of seconds in which every op
// takes up to twice its time (docs/cost-model.md), and a set's cycles run
// within milliseconds of each other, so a spell takes a set whole; the
// set is kept whole so its parts stay consistent with each other.
HostCosts LessDisturbed(const HostCosts& a, const HostCosts& b);

}  // namespace hpt

#endif  // HPT_WORKERS_HOST_CALIBRATION_H_
