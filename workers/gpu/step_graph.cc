#include "workers/gpu/step_graph.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "models/st_transformer.h"
#include "workers/gpu/bf16_autocast.h"
#include "workers/gpu/cuda_timing.h"
#include "workers/gpu/gpu_executor.h"

namespace hpt {

namespace {

// `fn` on `group`'s options as the session's optimizer keeps them: Adam's
// and AdamW's have the same fields in classes of their own.
template <typename Fn>
auto OnAdamOptions(const GpuSession& session, const torch::optim::OptimizerParamGroup& group,
                   Fn&& fn) {
  return session.optimizer_type == ADAMW
             ? fn(static_cast<const torch::optim::AdamWOptions&>(group.options()))
             : fn(static_cast<const torch::optim::AdamOptions&>(group.options()));
}

}  // namespace

std::string GraphRefusal(const GpuSession& session, const torch::Device& device,
                         bool uncaptured) {
  if (!uncaptured && !device.is_cuda()) {
    return "this worker has no CUDA device (CUDA graphs need a GPU), so its steps ran eager";
  }
  if (session.group) {
    return absl::StrCat("data-parallel over ", session.group->getSize(),
                        " workers: a captured step cannot hold the all-reduce between them "
                        "here, so their steps ran eager");
  }
  for (const auto& group : session.optimizer->param_groups()) {
    if (OnAdamOptions(session, group, [](const auto& o) { return o.amsgrad(); })) {
      return "AMSGrad has no fused step to capture, so the steps ran eager";
    }
  }
  return "";
}

namespace {

// The optimizer's per-parameter state as the fused step needs it, through
// the class (Adam's or AdamW's) it has.
struct AdamStateView {
  torch::optim::OptimizerParamState* state;
  bool adamw;
  template <typename Fn>
  auto On(Fn&& fn) const {
    return adamw ? fn(*static_cast<torch::optim::AdamWParamState*>(state))
                 : fn(*static_cast<torch::optim::AdamParamState*>(state));
  }
  int64_t step() const {
    return On([](const auto& s) { return s.step(); });
  }
  void set_step(int64_t step) const {
    On([step](auto& s) { s.step(step); });
  }
  torch::Tensor exp_avg() const {
    return On([](const auto& s) { return s.exp_avg(); });
  }
  torch::Tensor exp_avg_sq() const {
    return On([](const auto& s) { return s.exp_avg_sq(); });
  }
};

}  // namespace

// What every shape's graph reads and writes: the parameters the optimizer
// steps, their gradients (static: a capture adds into them in place), the
// optimizer's moments, the step counts on the device (`mirror`: the host
// count each holds), and the rate and loss weight a replay is given.
struct FusedAdamState {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
  std::vector<AdamStateView> views;
  std::vector<int64_t> mirror;
  torch::Tensor lr, scale;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool adamw = false;
};

struct StepGraphs::Shape {
  RunShapes keys;
  torch::Tensor ids, loss;  // the step's samples in, its loss out
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // null until captured
};

StepGraphs::StepGraphs(bool uncaptured) : uncaptured_(uncaptured) {}
StepGraphs::~StepGraphs() = default;

namespace {

// The fused state of `session`'s optimizer after an eager step: every
// parameter the optimizer stepped (those with state), on `device`.
std::unique_ptr<FusedAdamState> MakeFused(GpuSession& session, const torch::Device& device) {
  auto f = std::make_unique<FusedAdamState>();
  f->adamw = session.optimizer_type == ADAMW;
  OnAdamOptions(session, session.optimizer->param_groups().at(0), [&](const auto& o) {
    std::tie(f->beta1, f->beta2) = o.betas();
    f->eps = o.eps();
    f->weight_decay = o.weight_decay();
  });
  const auto dev = torch::TensorOptions().dtype(torch::kFloat).device(device);
  for (const auto& g : session.optimizer->param_groups()) {
    for (const torch::Tensor& p : g.params()) {
      auto it = session.optimizer->state().find(p.unsafeGetTensorImpl());
      if (it == session.optimizer->state().end()) continue;  // never stepped
      const AdamStateView view{it->second.get(), f->adamw};
      f->params.push_back(p);
      f->grads.push_back(torch::zeros_like(p));
      f->exp_avgs.push_back(view.exp_avg());
      f->exp_avg_sqs.push_back(view.exp_avg_sq());
      f->steps.push_back(torch::full({}, double(view.step()), dev));
      f->views.push_back(view);
      f->mirror.push_back(view.step());
    }
  }
  f->lr = torch::zeros({}, dev);
  f->scale = torch::zeros({}, dev);
  return f;
}

// The captured body's first half: gradients zeroed in place, the shape's
// samples gathered, forward and the weighted loss's backward.
void ForwardBackward(GpuSession& session, const ResidentSamples& samples,
                     const torch::Device& device, FusedAdamState& f, StepGraphs::Shape& shape) {
  for (torch::Tensor& g : f.grads) g.zero_();
  torch::Tensor x, y, loss;
  GatherSamples(samples, shape.ids, &x, &y);
  {
    Bf16Autocast autocast(device, session.bf16);
    session.model->train();
    loss = MseLoss(session.model->forward(x), y);
  }
  (loss * f.scale).backward();
  shape.loss = loss.detach();
}

// Its second half: ATen's fused Adam (or AdamW) over every stepped
// parameter, its counts and rate read on the device.
void FusedUpdate(FusedAdamState& f) {
  at::_foreach_add_(f.steps, 1);
  if (f.adamw) {
    at::_fused_adamw_(f.params, f.grads, f.exp_avgs, f.exp_avg_sqs, {}, f.steps, f.lr, f.beta1,
                      f.beta2, f.weight_decay, f.eps, /*amsgrad=*/false, /*maximize=*/false);
  } else {
    at::_fused_adam_(f.params, f.grads, f.exp_avgs, f.exp_avg_sqs, {}, f.steps, f.lr, f.beta1,
                     f.beta2, f.weight_decay, f.eps, /*amsgrad=*/false, /*maximize=*/false);
  }
}

// The static gradients as the parameters' own while `body` runs (autograd
// adds into a defined gradient in place), and none after it: an eager
// step that follows starts from none, as after its optimizer's zero_grad.
template <typename Body>
void WithStaticGrads(FusedAdamState& f, Body&& body) {
  for (size_t i = 0; i < f.params.size(); ++i) f.params[i].mutable_grad() = f.grads[i];
  try {
    body();
  } catch (...) {
    for (torch::Tensor& p : f.params) p.mutable_grad().reset();
    throw;
  }
  for (torch::Tensor& p : f.params) p.mutable_grad().reset();
}

// Captures `shape`'s step on a side stream (the default stream cannot
// capture) after one uncaptured forward and backward there (cuBLAS's
// workspace for the stream, the gradients' first touch; no update), the
// side stream ordered after the current one and the current after it.
// The shape keeps the graph only where the capture succeeded.
void Capture(GpuSession& session, const ResidentSamples& samples, const torch::Device& device,
             FusedAdamState& f, StepGraphs::Shape& shape) {
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device.index());
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device.index());
  c10::Event before(c10::DeviceType::CUDA), after(c10::DeviceType::CUDA);
  before.record(current);
  before.block(side);
  auto graph = std::make_unique<at::cuda::CUDAGraph>();
  try {
    c10::StreamGuard guard(side);
    WithStaticGrads(f, [&] {
      ForwardBackward(session, samples, device, f, shape);
      CaptureGraph(*graph, [&] {
        ForwardBackward(session, samples, device, f, shape);
        FusedUpdate(f);
      });
    });
  } catch (...) {
    after.record(side);
    after.block(current);
    throw;
  }
  after.record(side);
  after.block(current);
  shape.graph = std::move(graph);
}

}  // namespace

void StepGraphs::Remember(int64_t batch, const RunShapes& shapes) {
  if (failed_ || shapes_.count(batch) || int(shapes_.size()) >= kMaxShapes) return;
  auto shape = std::make_unique<Shape>();
  shape->keys = shapes;
  shapes_[batch] = std::move(shape);
}

torch::Tensor StepGraphs::Train(GpuSession& session, const ResidentSamples& samples,
                                const torch::Tensor& ids, const RunStep& step, int64_t index,
                                RunShapes* shapes) {
  const int64_t n = ids.size(0);
  auto found = shapes_.find(n);
  if (failed_ || found == shapes_.end()) return torch::Tensor();
  Shape& shape = *found->second;
  const torch::Device device = ids.device();
  if (!fused_) fused_ = MakeFused(session, device);
  if (!shape.ids.defined()) shape.ids = torch::empty({n}, ids.options());
  FusedAdamState& f = *fused_;
  // The step's inputs, written on the device: no wait.
  shape.ids.copy_(ids);
  f.lr.fill_(step.learning_rate());
  f.scale.fill_(double(n) / double(step.global_batch_size()));
  for (size_t i = 0; i < f.views.size(); ++i) {
    const int64_t host = f.views[i].step();
    if (host != f.mirror[i]) {  // eager steps of another shape came between
      f.steps[i].fill_(double(host));
      f.mirror[i] = host;
    }
  }
  torch::manual_seed(GpuExecutor::DropoutSeed(session.seed, index, 0, /*rank=*/0));
  try {
    if (uncaptured_) {
      WithStaticGrads(f, [&] {
        ForwardBackward(session, samples, device, f, shape);
        FusedUpdate(f);
      });
    } else {
      if (shape.graph == nullptr) {
        Capture(session, samples, device, f, shape);
        // The capture ran nothing: the generator is seeded again for the replay.
        torch::manual_seed(GpuExecutor::DropoutSeed(session.seed, index, 0, /*rank=*/0));
      }
      shape.graph->replay();
    }
  } catch (const c10::Error& e) {
    failed_ = true;
    shapes_.clear();
    note_ = absl::StrCat("capture failed at step ", index, ", so it and later steps ran eager: ",
                         e.what_without_backtrace());
    return torch::Tensor();
  }
  for (size_t i = 0; i < f.views.size(); ++i) {
    f.views[i].set_step(f.mirror[i] + 1);
    f.mirror[i] += 1;
  }
  ++replays_;
  *shapes = shape.keys;
  return shape.loss.clone();
}

}  // namespace hpt
