// A session's run steps as CUDA graphs (`training.launch: graph`): each
// step shape is trained eagerly once (its kernels recorded for costing, as
// every run step's are), captured as one graph on its next step (forward,
// backward and ATen's fused Adam, every buffer static), and replayed from
// then on. Between replays the host writes only the step's sample ids, its
// rate and its loss weight into the graph's buffers and seeds the CUDA
// generator as an eager step would (DropoutSeed), so a replay draws the
// dropout masks an eager step draws; nothing waits for the device.
//
// The fused Adam works on the session's optimizer state: the same moment
// tensors (updated in place), and the host's step counts advanced with
// each replay, so a snapshot or a checkpoint after graph steps reads what
// eager steps would leave, up to the fused kernel's rounding.
//
// Where capture is impossible the steps go eager and GraphRefusal says
// why. A CPU twin (Options::uncaptured) runs the graph's body itself each
// step, uncaptured: the buffers, the fused Adam and the bookkeeping that
// the CUDA path replays, in a test without a GPU.
//
// Internal to the GPU executor: this header includes LibTorch.
#ifndef HPT_WORKERS_STEP_GRAPH_H_
#define HPT_WORKERS_STEP_GRAPH_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "proto/worker_service.pb.h"
#include "workers/gpu/gpu_run.h"

namespace hpt {

struct FusedAdamState;  // step_graph.cc

// Why `session`'s steps cannot be captured on `device`; empty where they
// can. `uncaptured`: the CPU twin, which needs no CUDA.
std::string GraphRefusal(const GpuSession& session, const torch::Device& device,
                         bool uncaptured);

class StepGraphs {
 public:
  // At most this many step shapes (per-rank batch sizes) are held as
  // graphs; a further shape trains eagerly.
  static constexpr int kMaxShapes = 4;

  explicit StepGraphs(bool uncaptured);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Trains step `index` of `session` by its shape's graph, capturing it
  // first where this is the shape's second step, and returns the step's
  // loss (on the device) with the shape's task keys in `shapes`. The
  // caller marks the step applied, as for an eager step. Undefined
  // where the step must go eager: the shape's first step (then Remember
  // it), a shape past kMaxShapes, or a capture that failed (note() says
  // so, and every later step goes eager).
  torch::Tensor Train(GpuSession& session, const ResidentSamples& samples,
                      const torch::Tensor& ids, const RunStep& step, int64_t index,
                      RunShapes* shapes);

  // After an eager step of `batch` samples: the task keys it recorded.
  void Remember(int64_t batch, const RunShapes& shapes);

  // Steps trained by graph, all told.
  int64_t replays() const { return replays_; }
  // Why steps went eager after a capture failed; empty if none did.
  const std::string& note() const { return note_; }

  struct Shape;  // a shape's buffers and graph (step_graph.cc)

 private:
  bool uncaptured_;
  // What every shape's graph steps: the optimizer's parameters, their
  // static gradients, its moments and counts (made at the first graph step).
  std::unique_ptr<FusedAdamState> fused_;
  std::map<int64_t, std::unique_ptr<Shape>> shapes_;
  int64_t replays_ = 0;
  bool failed_ = false;
  std::string note_;
};

}  // namespace hpt

#endif  // HPT_WORKERS_STEP_GRAPH_H_
