#include "workers/gpu/baseline_probe.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/gpu_baseline.h"
#include "models/model_config.h"
#include "models/st_transformer.h"
#include "workers/gpu/bf16_autocast.h"
#include "workers/gpu/cuda_timing.h"

namespace hpt {
namespace {

// Bounds that keep a probe from holding a worker for long.
constexpr int64_t kMaxSteps = 1000;
constexpr int64_t kMaxWarmUp = 100;

// Adam's defaults (PyTorch's torch.optim.Adam), as the workers' own
// optimizer is built.
constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

// ATen's fused Adam over every parameter at once: one kernel set a step,
// as PyTorch's Adam(fused=True) launches. The step counts live on the
// parameters' device, so a captured step replays with them (capturable).
class FusedAdam {
 public:
  FusedAdam(std::vector<torch::Tensor> params, double lr) : params_(std::move(params)), lr_(lr) {
    for (const torch::Tensor& p : params_) {
      exp_avg_.push_back(torch::zeros_like(p));
      exp_avg_sq_.push_back(torch::zeros_like(p));
      steps_.push_back(torch::zeros({}, p.options().dtype(torch::kFloat)));
    }
  }
  void Step() {
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor& p : params_) grads.push_back(p.grad());
    at::_foreach_add_(steps_, 1);
    at::_fused_adam_(params_, grads, exp_avg_, exp_avg_sq_, {}, steps_, lr_, kBeta1, kBeta2,
                     /*weight_decay=*/0, kEps, /*amsgrad=*/false, /*maximize=*/false);
  }

 private:
  std::vector<torch::Tensor> params_, exp_avg_, exp_avg_sq_, steps_;
  double lr_;
};

struct Scratch {
  SpatioTemporalTransformer model{nullptr};
  torch::Tensor x, y;
  std::vector<torch::Tensor> params;
};

Scratch MakeScratch(const ProbeBaselinesRequest& r, const torch::Device& device) {
  torch::manual_seed(r.seed());
  Scratch s;
  s.model = SpatioTemporalTransformer(r.model());
  s.model->to(device);
  s.model->train();
  s.x = torch::randn({r.batch(), r.tokens(), r.model().input_features()}, device);
  s.y = torch::randn({r.batch(), r.tokens(), r.model().output_features()}, device);
  s.params = s.model->parameters();
  return s;
}

// Forward and backward; gradients zeroed in place (their tensors stay, as
// a captured graph needs), or created by the first step.
void ForwardBackward(Scratch& s, const torch::Device& device, bool bf16) {
  for (torch::Tensor& p : s.params) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
  torch::Tensor loss;
  {
    Bf16Autocast autocast(device, bf16);
    loss = MseLoss(s.model->forward(s.x), s.y);
  }
  loss.backward();
}

// The least wall time the energy of a step is read over: the driver's
// energy counter advances in steps of its own (on an H200, 2026-11-27, 20
// whole-graph steps of 4.3 ms each read 0 J one run and 0.69 J a step
// another), so a short step's energy is the counter's rise over many steps
// divided by their number.
constexpr double kEnergyWindowS = 1.0;

// The median of `steps` timed calls of `step` after `warm_up` untimed ones,
// and the mean energy a step over at least kEnergyWindowS.
void Time(const std::function<void()>& step, const ProbeBaselinesRequest& r,
          DeviceMeter* meter, MeasuredBaseline* out) {
  for (int64_t i = 0; i < r.warm_up(); ++i) step();
  std::vector<double> seconds;
  for (int64_t i = 0; i < r.steps(); ++i) {
    meter->Start();
    step();
    seconds.push_back(meter->Stop().s);
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  out->set_step_s(seconds[seconds.size() / 2]);
  if (!meter->measures_energy()) return;
  const int64_t n = std::clamp<int64_t>(
      int64_t(std::ceil(kEnergyWindowS / std::max(out->step_s(), 1e-6))), r.steps(), 100000);
  meter->Start();
  for (int64_t i = 0; i < n; ++i) step();
  out->set_step_j(meter->Stop().j / double(n));
}

// The whole step captured once on a side stream (the default stream
// cannot capture) after warm-up steps there, then replayed.
void TimeGraph(Scratch& s, const torch::Device& device, bool bf16,
               const ProbeBaselinesRequest& r, DeviceMeter* meter, MeasuredBaseline* out) {
  FusedAdam adam(s.params, r.learning_rate());
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, device.index());
  c10::StreamGuard guard(stream);
  for (int64_t i = 0; i < std::max<int64_t>(r.warm_up(), 1); ++i) {
    ForwardBackward(s, device, bf16);
    adam.Step();
  }
  torch::cuda::synchronize(device.index());
  // Kept after capture so that its nodes can be counted; the first
  // replay instantiates it.
  at::cuda::CUDAGraph graph(/*keep_graph=*/true);
  // A broken capture is ended, so the next baseline runs.
  CaptureGraph(graph, [&] {
    ForwardBackward(s, device, bf16);
    adam.Step();
  });
  // What the cost model prices as graph nodes, counted: a missing count
  // leaves the fields 0 and the timing stands.
  if (absl::StatusOr<GraphNodeCount> count = CountGraphNodes(graph); count.ok()) {
    out->set_graph_nodes(count->nodes);
    out->set_graph_kernels(count->kernels);
  }
  ProbeBaselinesRequest replays = r;
  replays.set_warm_up(1);
  Time([&] { graph.replay(); }, replays, meter, out);
}

absl::Status CheckRequest(const ProbeBaselinesRequest& r) {
  if (absl::Status s = ValidateModelConfig(r.model()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("ProbeBaselinesRequest.model: ", s.message()));
  }
  if (r.batch() < 1 || r.tokens() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ProbeBaselinesRequest.batch and .tokens must be at least 1, got ", r.batch(), " and ",
        r.tokens()));
  }
  if (r.steps() < 1 || r.steps() > kMaxSteps || r.warm_up() < 0 || r.warm_up() > kMaxWarmUp) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ProbeBaselinesRequest.steps must be in [1, ", kMaxSteps, "] and .warm_up in [0, ",
        kMaxWarmUp, "], got ", r.steps(), " and ", r.warm_up()));
  }
  for (int b : r.baselines()) {
    const auto& known = ProbedBaselines();
    if (std::find(known.begin(), known.end(), b) == known.end()) {
      std::vector<std::string> names;
      for (GpuBaseline::Name k : known) names.push_back(GpuBaselineName(k));
      const std::string given = b != 0 && GpuBaseline::Name_IsValid(b)
                                    ? GpuBaselineName(GpuBaseline::Name(b))
                                    : absl::StrCat(b);
      return absl::InvalidArgumentError(absl::StrCat("ProbeBaselinesRequest.baselines: ", given,
                                                     " is not one of ",
                                                     absl::StrJoin(names, ", ")));
    }
  }
  return absl::OkStatus();
}

ProbeBaselinesRequest WithDefaults(ProbeBaselinesRequest r) {
  if (r.steps() == 0) r.set_steps(10);
  if (r.warm_up() == 0) r.set_warm_up(3);
  if (r.learning_rate() <= 0) r.set_learning_rate(1e-3);
  if (r.baselines().empty()) {
    for (GpuBaseline::Name b : ProbedBaselines()) r.add_baselines(b);
  }
  return r;
}

std::string PathOf(GpuBaseline::Name baseline, bool cuda) {
  if (baseline == GpuBaseline::paper) {
    return "eager, per-parameter Adam, from C++ (the paper's step without Python's per-op "
           "layer)";
  }
  if (baseline == GpuBaseline::fused) return "eager, ATen's fused Adam, from C++";
  if (baseline == GpuBaseline::graph) return "whole step as one CUDA graph, fused Adam, replayed";
  return cuda ? "whole step as one CUDA graph under bf16 autocast, fused Adam"
              : "eager under the CPU's bf16 autocast, fused Adam (no graphs on the CPU)";
}

}  // namespace

const std::vector<GpuBaseline::Name>& ProbedBaselines() {
  static const auto* names = new std::vector<GpuBaseline::Name>{
      GpuBaseline::paper, GpuBaseline::fused, GpuBaseline::graph, GpuBaseline::bf16};
  return *names;
}

absl::StatusOr<ProbeBaselinesResponse> ProbeBaselines(const ProbeBaselinesRequest& request,
                                                      const std::string& device_text,
                                                      DeviceMeter* meter) {
  const ProbeBaselinesRequest r = WithDefaults(request);
  if (absl::Status s = CheckRequest(r); !s.ok()) return s;
  const torch::Device device(device_text);
  ProbeBaselinesResponse response;
  for (int b : r.baselines()) {
    const GpuBaseline::Name baseline = GpuBaseline::Name(b);
    MeasuredBaseline* out = response.add_baselines();
    out->set_baseline(baseline);
    out->set_path(PathOf(baseline, device.is_cuda()));
    out->set_device(device_text);
    out->set_device_name(meter->device_name());
    out->set_measured_by(meter->measured_by());
    out->set_batch(r.batch());
    out->set_tokens(r.tokens());
    if (baseline == GpuBaseline::graph && !device.is_cuda()) {
      out->set_not_run("not run: no CUDA (CUDA graphs need a GPU)");
      continue;
    }
    out->set_timed_steps(r.steps());
    out->set_warm_up(r.warm_up());
    try {
      Scratch s = MakeScratch(r, device);
      if (baseline == GpuBaseline::paper) {
        torch::optim::Adam adam(s.params, torch::optim::AdamOptions(r.learning_rate()));
        Time([&] { ForwardBackward(s, device, false); adam.step(); }, r, meter, out);
      } else if (baseline == GpuBaseline::fused || !device.is_cuda()) {
        FusedAdam adam(s.params, r.learning_rate());
        const bool bf16 = baseline == GpuBaseline::bf16;
        Time([&] { ForwardBackward(s, device, bf16); adam.Step(); }, r, meter, out);
      } else {
        TimeGraph(s, device, baseline == GpuBaseline::bf16, r, meter, out);
      }
    } catch (const c10::Error& e) {
      out->clear_timed_steps();
      out->set_not_run(absl::StrCat("failed in LibTorch: ", e.what_without_backtrace()));
    }
  }
  return response;
}

}  // namespace hpt
