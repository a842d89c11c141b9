// For tests: a GPU worker (LibTorch on the CPU), a ReRAM worker and a
// systolic worker in this process, behind local clients, as a trainer's
// options take them; and a small synthetic data set to train on.
//
//   InProcessWorkers w;
//   Trainer trainer("j", spec, &data, w.gpus(), w.Options());
#ifndef HPT_INPROCESS_IN_PROCESS_WORKERS_H_
#define HPT_INPROCESS_IN_PROCESS_WORKERS_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "coordinator/dispatch/local_worker_client.h"
#include "coordinator/training/checkpoint.h"
#include "coordinator/training/trainer.h"
#include "data/synthetic.h"
#include "data/window_dataset.h"
#include "workers/gpu/gpu_executor.h"
#include "workers/sim/device_executor.h"

namespace hpt {

// A small synthetic data set: `stations` tokens over 200 time steps, 6
// input steps, train 0-160, test 160-200.
inline std::unique_ptr<WindowDataset> SmallSyntheticWindows(int stations) {
  SyntheticOptions s;
  s.stations = stations;
  s.time_steps = 200;
  WindowOptions w;
  w.input_steps = 6;
  w.train = {0, 160};
  w.test = {160, 200};
  return std::make_unique<WindowDataset>(*WindowDataset::Create(MakeSyntheticSeries(s), w));
}

// A trainer's run as a test keeps it: how it ended, its last update, the
// model it trained, and the checkpoints it made where asked.
struct TrainerOutcome {
  absl::Status status;
  TrainerUpdate last;
  TrainedModel model;
  std::vector<Checkpoint> checkpoints;
};

// The largest absolute difference between two trained models' parameters;
// infinity where their names or shapes differ.
inline double MaxParameterDifference(const TrainedModel& a, const TrainedModel& b) {
  constexpr double kApart = std::numeric_limits<double>::infinity();
  if (a.parameters.size() != b.parameters.size()) return kApart;
  double worst = 0;
  for (const auto& [name, t] : a.parameters) {
    auto it = b.parameters.find(name);
    if (it == b.parameters.end() || it->second.shape != t.shape) return kApart;
    for (size_t i = 0; i < t.data.size(); ++i) {
      worst = std::max(worst, double(std::abs(it->second.data[i] - t.data[i])));
    }
  }
  return worst;
}

// A placement by name, for tests parameterised by names.
inline Placement::Name PlacementNamed(const std::string& name) {
  Placement::Name p = Placement::PLACEMENT_UNSPECIFIED;
  Placement::Name_Parse(name, &p);
  return p;
}

struct InProcessWorkers {
  InProcessWorkers() {
    GpuExecutor::Options g;
    g.device = "cpu";
    gpu = *GpuExecutor::Create(g);
    DeviceExecutor::Options r, y;
    r.kind = DeviceKind::reram;
    y.kind = DeviceKind::systolic;
    reram = *DeviceExecutor::Create(r);
    systolic = *DeviceExecutor::Create(y);
    gpu_client = std::make_unique<LocalWorkerClient>("gpu0", gpu.get());
    reram_client = std::make_unique<LocalWorkerClient>("reram0", reram.get());
    systolic_client = std::make_unique<LocalWorkerClient>("systolic0", systolic.get());
  }
  std::vector<WorkerClient*> gpus() const { return {gpu_client.get()}; }
  // The device workers set; the caller adds on_progress and the rest.
  Trainer::Options Options() const {
    Trainer::Options options;
    options.reram_workers = {reram_client.get()};
    options.systolic_workers = {systolic_client.get()};
    return options;
  }

  std::unique_ptr<GpuExecutor> gpu;
  std::unique_ptr<DeviceExecutor> reram, systolic;
  std::unique_ptr<LocalWorkerClient> gpu_client, reram_client, systolic_client;
};

}  // namespace hpt

#endif  // HPT_INPROCESS_IN_PROCESS_WORKERS_H_
