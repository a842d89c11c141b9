#include "workers/gpu/gpu_run.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "models/st_transformer.h"
#include "workers/gpu/bf16_autocast.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/gpu/step_graph.h"

namespace hpt {

int64_t ResidentSamples::num_ids() const {
  const int64_t start_rows = source.rows() - source.input_steps() - source.horizon() + 1;
  return std::max<int64_t>(0, start_rows) * source.groups();
}

absl::StatusOr<ResidentSamples> MakeResidentSamples(const SampleSource& source,
                                                    const HostTensor& series,
                                                    const torch::Device& device) {
  auto field = [](const char* name, int64_t value, int64_t least) -> absl::Status {
    if (value >= least) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("LoadParametersHeader.samples.", name, " is ",
                                                   value, "; it must be at least ", least));
  };
  for (absl::Status s : {field("rows", source.rows(), 1), field("columns", source.columns(), 1),
                         field("input_steps", source.input_steps(), 1),
                         field("horizon", source.horizon(), 1), field("tokens", source.tokens(), 1),
                         field("groups", source.groups(), 1),
                         field("group_stride", source.group_stride(), 0)}) {
    if (!s.ok()) return s;
  }
  if (series.shape != std::vector<int64_t>{source.rows(), source.columns()}) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", kSamplesTensor, "' has shape ", series.ShapeString(),
        "; LoadParametersHeader.samples says [", source.rows(), ", ", source.columns(), "]"));
  }
  const int64_t last_column = (source.groups() - 1) * source.group_stride() + source.tokens();
  if (last_column > source.columns()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LoadParametersHeader.samples: ", source.groups(), " groups of ", source.tokens(),
        " tokens every ", source.group_stride(), " columns need ", last_column,
        " columns; the series has ", source.columns()));
  }
  ResidentSamples samples;
  samples.source = source;
  samples.series = ToTorch(series, device);
  return samples;
}

void GatherSamples(const ResidentSamples& samples, const torch::Tensor& ids, torch::Tensor* x,
                   torch::Tensor* y) {
  const SampleSource& s = samples.source;
  const auto on = torch::TensorOptions().dtype(torch::kInt64).device(ids.device());
  const torch::Tensor start_row = torch::div(ids, s.groups(), "floor");
  const torch::Tensor first_column = torch::remainder(ids, s.groups()) * s.group_stride();
  // Flat positions in the [rows, columns] series: row * columns + column.
  const torch::Tensor rows = start_row.view({-1, 1, 1}) + torch::arange(s.input_steps(), on).view({1, 1, -1});
  const torch::Tensor columns =
      first_column.view({-1, 1, 1}) + torch::arange(s.tokens(), on).view({1, -1, 1});
  const torch::Tensor flat = samples.series.view(-1);
  *x = flat.index_select(0, (rows * s.columns() + columns).view(-1))
           .view({ids.size(0), s.tokens(), s.input_steps()});
  const torch::Tensor target_row = start_row.view({-1, 1, 1}) + (s.input_steps() - 1 + s.horizon());
  *y = flat.index_select(0, (target_row * s.columns() + columns).view(-1))
           .view({ids.size(0), s.tokens(), 1});
}

namespace {

// Each of `steps` (`field`, for messages) against the samples.
absl::Status CheckSteps(const google::protobuf::RepeatedPtrField<RunStep>& steps,
                        const std::string& field, int64_t ids) {
  for (int i = 0; i < steps.size(); ++i) {
    const RunStep& step = steps[i];
    const std::string at = absl::StrCat("TrainRunRequest.", field, "[", i, "]");
    if (step.samples_size() == 0) return absl::InvalidArgumentError(at + ".samples is empty");
    if (step.global_batch_size() < step.samples_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ".global_batch_size ", step.global_batch_size(), " is below its ",
          step.samples_size(), " samples"));
    }
    if (!(step.learning_rate() > 0) || !std::isfinite(step.learning_rate())) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ".learning_rate is ", step.learning_rate(), "; it must be positive and finite"));
    }
    for (int64_t id : step.samples()) {
      if (id < 0 || id >= ids) {
        return absl::InvalidArgumentError(absl::StrCat(
            at, ".samples holds ", id, "; the resident samples' ids are 0 to ", ids - 1));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRun(const TrainRunRequest& request, const ResidentSamples& samples) {
  if (request.steps_size() == 0) {
    return absl::InvalidArgumentError("TrainRunRequest.steps is empty");
  }
  if (request.first_step() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainRunRequest.first_step is ", request.first_step(), "; it must be >= 0"));
  }
  if (!request.trial_job().empty() && request.trial_steps_size() != request.steps_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TrainRunRequest.trial_steps has ", request.trial_steps_size(),
        " steps; a trial takes one to each of the run's ", request.steps_size()));
  }
  if (request.trial_job().empty() && request.trial_steps_size() > 0) {
    return absl::InvalidArgumentError("TrainRunRequest.trial_steps is set without a trial_job");
  }
  if (absl::Status s = CheckSteps(request.steps(), "steps", samples.num_ids()); !s.ok()) return s;
  return CheckSteps(request.trial_steps(), "trial_steps", samples.num_ids());
}

namespace {

// `body` with the memo's recorder for `key` around it.
template <typename Body>
void Recorded(GpuSession& session, const std::string& key, Body&& body) {
  std::unique_ptr<KernelRecorder> recorder = session.kernels.Begin(key);
  body();
  session.kernels.End(key, std::move(recorder));
}

// One eager step of `session` on `step`'s samples (`ids`, on the
// device): forward, backward with the group's all-reduce, update, each
// under the memo's recorder for its task shape. Returns the step's loss,
// on the device.
torch::Tensor TrainOneStep(GpuSession& session, const ResidentSamples& samples,
                           const torch::Tensor& ids, const RunStep& step, int64_t index,
                           const RunDevice& run_device, RunShapes* shapes) {
  const torch::Device& device = run_device.device;
  const int64_t n = step.samples_size();
  const int rank = session.group ? session.group->getRank() : 0;
  shapes->forward = ForwardShapeKey({n, samples.source.tokens(), session.config.input_features()},
                                    /*train=*/true, /*targets=*/true, /*outputs=*/false);
  shapes->backward = BackwardShapeKey(n, /*encoder=*/false, /*allreduce=*/bool(session.group));
  torch::Tensor loss;
  Recorded(session, shapes->forward, [&] {
    torch::Tensor x, y;
    GatherSamples(samples, ids, &x, &y);
    torch::manual_seed(GpuExecutor::DropoutSeed(session.seed, index, 0, rank));
    Bf16Autocast autocast(device, session.bf16);
    session.model->train();
    loss = MseLoss(session.model->forward(x), y);
  });
  Recorded(session, shapes->backward, [&] {
    const torch::Tensor weighted = loss * (double(n) / double(step.global_batch_size()));
    if (!session.group) {
      weighted.backward();
      return;
    }
    if (!session.buckets) {  // the group's first run; it hooks what trains
      session.buckets = std::make_unique<GradientBuckets>(session.group,
                                                          session.model->parameters(),
                                                          run_device.bucket_bytes,
                                                          run_device.first_bucket_bytes);
    }
    GradientBuckets& buckets = *session.buckets;
    buckets.Arm();
    try {
      weighted.backward();  // the hooks all-reduce each bucket as it fills
    } catch (...) {
      buckets.Disarm();
      throw;
    }
    buckets.Finish();
  });
  if (shapes->stepped.empty()) {
    shapes->stepped = SteppedNumels(session);
    shapes->update = UpdateShapeKey(shapes->stepped);
  }
  Recorded(session, shapes->update, [&] {
    SetLearningRate(session, step.learning_rate());
    session.optimizer->step();
    session.optimizer->zero_grad();
  });
  return loss.detach();
}

// Every sample id of `steps` in one device tensor, and where each step's
// begin.
torch::Tensor SampleIds(const google::protobuf::RepeatedPtrField<RunStep>& steps,
                        const torch::Device& device, std::vector<int64_t>* offsets) {
  std::vector<int64_t> all;
  for (const RunStep& step : steps) {
    offsets->push_back(int64_t(all.size()));
    all.insert(all.end(), step.samples().begin(), step.samples().end());
  }
  // A copy: on the CPU, to() would alias `all`, which ends here.
  return torch::from_blob(all.data(), {int64_t(all.size())}, torch::kInt64)
      .to(device, torch::kInt64, /*non_blocking=*/false, /*copy=*/true);
}

// The session's graphs where the run asks for them and its steps can be
// captured; else null, with why in `*note` (may be null).
StepGraphs* GraphsOf(GpuSession& session, const RunDevice& run_device, std::string* note) {
  if (run_device.launch != Launch::graph) return nullptr;
  const std::string refusal =
      GraphRefusal(session, run_device.device, run_device.uncaptured_graphs);
  if (!refusal.empty()) {
    if (note != nullptr) *note = refusal;
    return nullptr;
  }
  if (!session.graphs) session.graphs = std::make_shared<StepGraphs>(run_device.uncaptured_graphs);
  return session.graphs.get();
}

// One step of `session`: by its shape's graph where it has one, else
// eager (and the shape remembered for a graph); then the step is applied.
torch::Tensor TrainStep(GpuSession& session, StepGraphs* graphs, const ResidentSamples& samples,
                        const torch::Tensor& ids, const RunStep& step, int64_t index,
                        const RunDevice& run_device, RunShapes* shapes) {
  torch::Tensor loss;
  if (graphs != nullptr) loss = graphs->Train(session, samples, ids, step, index, shapes);
  if (!loss.defined()) {
    loss = TrainOneStep(session, samples, ids, step, index, run_device, shapes);
    if (graphs != nullptr) graphs->Remember(step.samples_size(), *shapes);
  }
  session.tasks.Apply(index);
  session.last_batch = step.samples_size();
  session.last_tokens = samples.source.tokens();
  return loss;
}

// How a run of `session` launched, from its graphs' replays before and
// after it.
void SayLaunch(const StepGraphs* graphs, int64_t replays_before, RunResult* result) {
  if (graphs == nullptr) return;
  const bool replayed = graphs->replays() > replays_before;
  result->launch = replayed ? Launch::graph : Launch::eager;
  if (!graphs->note().empty()) {
    result->launch_note = graphs->note();
  } else if (!replayed) {
    result->launch_note = "each step shape trains eagerly once before it is captured; this run "
                          "held only such steps";
  }
}

}  // namespace

RunResult TrainRunSteps(GpuSession& session, GpuSession* trial, const ResidentSamples& samples,
                        const TrainRunRequest& request, const RunDevice& run_device) {
  const torch::Device& device = run_device.device;
  RunResult result;
  StepGraphs* graphs = GraphsOf(session, run_device, &result.launch_note);
  StepGraphs* trial_graphs = trial != nullptr ? GraphsOf(*trial, run_device, nullptr) : nullptr;
  const int64_t replays_before = graphs != nullptr ? graphs->replays() : 0;
  // Every sample id of the run reaches the device in one copy (two with a
  // trial).
  std::vector<int64_t> offsets, trial_offsets;
  const torch::Tensor ids = SampleIds(request.steps(), device, &offsets);
  const torch::Tensor trial_ids =
      trial != nullptr ? SampleIds(request.trial_steps(), device, &trial_offsets) : torch::Tensor();
  for (int i = 0; i < request.steps_size(); ++i) {
    const int64_t index = request.first_step() + i;
    const RunStep& step = request.steps(i);
    if (!session.tasks.Applied(index)) {  // else a run replayed past it
      result.losses.push_back(TrainStep(session, graphs, samples,
                                        ids.narrow(0, offsets[i], step.samples_size()), step,
                                        index, run_device, &result.shapes));
      result.steps.push_back(index);
    }
    if (trial != nullptr && !trial->tasks.Applied(index)) {
      const RunStep& t = request.trial_steps(i);
      result.trial_losses.push_back(
          TrainStep(*trial, trial_graphs, samples,
                    trial_ids.narrow(0, trial_offsets[i], t.samples_size()), t, index,
                    run_device, &result.trial_shapes));
      result.trial_steps.push_back(index);
    }
  }
  SayLaunch(graphs, replays_before, &result);
  return result;
}

absl::Status CheckNotTaskApplied(const GpuSession& session, const std::string& job,
                                 const TrainRunRequest& request) {
  for (int i = 0; i < request.steps_size(); ++i) {
    const int64_t step = request.first_step() + i;
    if (session.tasks.Applied(step) && !session.run_losses.count(step)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "step ", step, " of job ", job, " was applied by task calls, not a run: "
          "resume from a checkpoint to train it again"));
    }
  }
  return absl::OkStatus();
}

namespace {

// Keeps `values` (the steps' losses, read from the device) as `steps`'
// in `session`, and answers every step of the run from what it keeps.
void KeepLosses(GpuSession& session, const std::vector<int64_t>& steps, const float* values,
                const TrainRunRequest& request,
                google::protobuf::RepeatedField<double>* losses) {
  for (size_t i = 0; i < steps.size(); ++i) session.run_losses[steps[i]] = double(values[i]);
  for (int i = 0; i < request.steps_size(); ++i) {
    losses->Add(session.run_losses.at(request.first_step() + i));
  }
  // Losses older than this run are never asked for again.
  session.run_losses.erase(session.run_losses.begin(),
                           session.run_losses.lower_bound(request.first_step()));
}

// The cost of a task shape a run took: computed the first time, and again
// only when the memo has recorded the shape anew.
const CostReport& ShapeCost(const RunDevice& run_device, const std::string& task_type,
                            GpuSession& session, const std::string& shape,
                            const std::vector<int64_t>& optimizer_numel = {}) {
  const int recorded = session.kernels.recorded(shape);
  auto it = session.shape_costs.find(shape);
  if (it == session.shape_costs.end() || it->second.first != recorded) {
    CostReport cost =
        run_device.cost(task_type, session, session.kernels.End(shape, nullptr), optimizer_numel);
    it = session.shape_costs.insert_or_assign(shape, std::make_pair(recorded, cost)).first;
  }
  return it->second.second;
}

// The three task costs of `shapes` on `session`.
void ShapeCosts(const RunDevice& run_device, GpuSession& session, const RunShapes& shapes,
                CostReport* forward, CostReport* backward, CostReport* update) {
  *forward = ShapeCost(run_device, "forward", session, shapes.forward);
  *backward = ShapeCost(run_device, "backward", session, shapes.backward);
  *update = ShapeCost(run_device, "update", session, shapes.update, shapes.stepped);
}

// A run's step costs in `response`: each task shape's (the trial's too),
// with a step's share of the run's measured time and energy, split among
// the tasks in proportion to their modelled times.
void FillRunCosts(const RunDevice& run_device, const RunResult& run, GpuSession& session,
                  GpuSession* trial, const DeviceMeter::Reading& measured,
                  TrainRunResponse* response) {
  std::vector<CostReport*> tasks;
  if (!run.steps.empty()) {
    tasks = {response->mutable_forward(), response->mutable_backward(),
             response->mutable_update()};
    ShapeCosts(run_device, session, run.shapes, tasks[0], tasks[1], tasks[2]);
  }
  if (trial != nullptr && !run.trial_steps.empty()) {
    CostReport* t[3] = {response->mutable_trial_forward(), response->mutable_trial_backward(),
                        response->mutable_trial_update()};
    ShapeCosts(run_device, *trial, run.trial_shapes, t[0], t[1], t[2]);
    tasks.insert(tasks.end(), t, t + 3);
  }
  const size_t steps = std::max(run.steps.size(), run.trial_steps.size());
  if (tasks.empty() || steps == 0) return;
  double modelled = 0;
  for (const CostReport* t : tasks) modelled += t->simulated_s();
  for (CostReport* t : tasks) {
    const double share = modelled > 0 ? t->simulated_s() / modelled : 1.0 / double(tasks.size());
    t->set_measured_s(measured.s / double(steps) * share);
    t->set_measured_j(measured.j / double(steps) * share);
    SetCounter(run_device.meter->board(), measured, t);  // the run's: the share is in measured_j
  }
}

}  // namespace

TrainRunResponse AnswerRun(GpuSession& session, GpuSession* trial, const ResidentSamples& samples,
                           const TrainRunRequest& request, const RunDevice& run_device) {
  run_device.meter->Start();
  RunResult run = TrainRunSteps(session, trial, samples, request, run_device);
  std::vector<torch::Tensor> all = run.losses;
  all.insert(all.end(), run.trial_losses.begin(), run.trial_losses.end());
  torch::Tensor losses;
  if (!all.empty()) {
    // One copy of every loss, started before the run's one wait.
    losses = torch::stack(all).to(torch::kFloat);
    if (run_device.device.is_cuda()) losses = losses.to(torch::kCPU, /*non_blocking=*/true);
  }
  if (run_device.on_wait) run_device.on_wait("the run's end: its losses and its span");
  const DeviceMeter::Reading measured = run_device.meter->Stop();
  const torch::Tensor host = losses.defined() ? losses.contiguous() : torch::zeros({0});
  const float* values = host.data_ptr<float>();
  TrainRunResponse response;
  KeepLosses(session, run.steps, values, request, response.mutable_losses());
  if (trial != nullptr) {
    KeepLosses(*trial, run.trial_steps, values + run.steps.size(), request,
               response.mutable_trial_losses());
  }
  response.set_measured_s(measured.s);
  response.set_measured_j(measured.j);
  response.set_host_syncs(1);
  response.set_launch(run.launch);
  response.set_launch_note(run.launch_note);
  FillRunCosts(run_device, run, session, trial, measured, &response);
  session.last_run_first_step = request.first_step();
  session.last_run_trial = request.trial_job();
  session.last_run = response;
  return response;
}

}  // namespace hpt
